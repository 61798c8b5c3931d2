import { useState } from 'react';
import { call, type ApiClient } from '../api/client';
import type { paths } from '../api/schema';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';

type Rotation = paths['/coaps/certificate/rotate']['post']['responses'][200]['content']['application/json'];

/** Rotates the CoAPS server certificate (POST /coaps/certificate/rotate) after a confirmation. */
export function CertificateRotation({ api }: { readonly api: ApiClient }) {
  const [rotated, setRotated] = useState<Rotation | undefined>(undefined);
  return (
    <div className="card super-card" role="region" aria-labelledby="rotate-title">
      <h2 id="rotate-title">CoAPS server certificate</h2>
      <p className="muted">
        Makes a new self-signed certificate (or re-reads the supplied files), used from the next DTLS handshake without a restart. Devices that pin the old certificate
        are refused until they get the new one (<code>GET /coaps/certificate</code>).
      </p>
      <ConfirmButton
        label="Rotate certificate"
        busyLabel="Rotating…"
        question="Rotate the CoAPS certificate for every account now?"
        onConfirm={async () => {
          setRotated(await call(api.POST('/coaps/certificate/rotate')));
        }}
      />
      {rotated === undefined ? null : (
        <div role="status">
          <p className="notice">The certificate was rotated.</p>
          <dl className="fields super-certificate">
            <dt>SHA-256</dt>
            <dd className="mono">{rotated.fingerprintSha256}</dd>
            <dt>Valid until</dt>
            <dd>
              <DateTime value={rotated.notAfter} />
            </dd>
            <dt>Source</dt>
            <dd>{rotated.source}</dd>
          </dl>
        </div>
      )}
    </div>
  );
}
