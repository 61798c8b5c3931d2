/**
 * The vendor's licence-signing public key (Ed25519, SPKI PEM). Its private half is the vendor's secret and is
 * never in this repository; licences it signs are accepted by every installation. Replacing it invalidates
 * every licence issued so far.
 */
export const VENDOR_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA6kzihxP3GEINq7O5AwR+QDXb+975o/k5r0EQRehs44Q=
-----END PUBLIC KEY-----
`;
