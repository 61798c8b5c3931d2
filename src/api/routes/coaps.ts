import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ServerCertificate } from '../../dtls/server-certificate.js';
import { AppError } from '../../errors.js';
import { ERROR_RESPONSES } from '../schemas.js';

/** The DTLS server certificate for devices to pin (SPEC Authentication 7): public, never any key. */
export const coapsRoutes: FastifyPluginAsyncTypebox<{ serverCertificate: ServerCertificate | undefined }> = async (app, { serverCertificate }) => {
  app.get(
    '/coaps/certificate',
    {
      config: { public: true },
      schema: {
        tags: ['devices'],
        summary: 'The CoAPS (DTLS) server certificate, PEM (default) or DER (?format=der), for devices to verify the server',
        querystring: Type.Object({ format: Type.Optional(Type.Enum(['pem', 'der'])) }, { additionalProperties: false }),
        response: { 200: Type.Unknown(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      if (!serverCertificate) throw new AppError('IOTB_COAPS_OFF');
      const format = request.query.format ?? 'pem';
      const current = serverCertificate.current;
      reply.header('x-certificate-sha256', current.fingerprintSha256).header('x-certificate-not-after', current.notAfter.toISOString());
      if (format === 'der') return reply.type('application/pkix-cert').send(serverCertificate.download('der'));
      return reply.type('application/x-pem-file').send(serverCertificate.download('pem'));
    },
  );

  app.post(
    '/coaps/certificate/rotate',
    {
      schema: {
        tags: ['devices'],
        summary: 'Super-Admin: make a new self-signed server certificate (or re-read the supplied files); used from the next handshake, no restart',
        response: { 200: Type.Object({ fingerprintSha256: Type.String(), notAfter: Type.String(), source: Type.String() }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
      if (!serverCertificate) throw new AppError('IOTB_COAPS_OFF');
      const rotated = await serverCertificate.rotate();
      return { fingerprintSha256: rotated.fingerprintSha256, notAfter: rotated.notAfter.toISOString(), source: rotated.source };
    },
  );
};
