/**
 * TLS on the listeners (docs/operations.md#tls): a PEM certificate chain and
 * its key, checked before anything listens so that a missing, unreadable or
 * mismatched pair stops start-up with one line (and leaves a running relay
 * on the pair it had, at SIGHUP). TLS 1.2 and 1.3 only; ALPN http/1.1 where
 * the acceptor negotiates ALPN (node:https; uWS sends no ALPN extension, so
 * its clients speak HTTP/1.1, their default).
 */
import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { TlsError } from '../errors.js';

export type TlsListener = 'http' | 'admin';

/** A checked pair, as read at one moment: the files' paths and their bytes. */
export interface TlsPair {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
  /** SHA-256 fingerprint of the server certificate, for the logs (public). */
  fingerprint: string;
  /** The certificate's last day of validity. */
  validTo: string;
}

export const TLS_MIN_VERSION = 'TLSv1.2';
export const TLS_ALPN = ['http/1.1'];

const REASONS: Record<string, string> = {
  ENOENT: 'is missing',
  EACCES: 'is not readable by this user (permission denied)',
  EPERM: 'is not readable by this user (permission denied)',
  EISDIR: 'is a directory',
};

function readPem(listener: TlsListener, key: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    throw new TlsError(listener, `${listener}.${key} ${path} ${REASONS[code] ?? `cannot be read (${code || 'reason unknown'})`} — point ${listener}.${key} at a PEM file this user can read`);
  }
}

/**
 * The listener's pair, or null when neither file is set. Throws a TlsError
 * whose message is one line naming the key, the path and what to do; the
 * key's bytes never appear in it.
 */
export function readTls(listener: TlsListener, certFile: string, keyFile: string): TlsPair | null {
  if (certFile === '' && keyFile === '') return null;
  if (certFile === '' || keyFile === '') {
    const missing = certFile === '' ? 'tls_cert_file' : 'tls_key_file';
    throw new TlsError(listener, `${listener}.${missing} is not set but ${listener}.${missing === 'tls_cert_file' ? 'tls_key_file' : 'tls_cert_file'} is — set both, or neither for plain HTTP`);
  }
  const cert = readPem(listener, 'tls_cert_file', certFile);
  const key = readPem(listener, 'tls_key_file', keyFile);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new TlsError(listener, `${listener}.tls_cert_file ${certFile} holds no PEM certificate — point it at the certificate chain (PEM, the server certificate first)`);
  }
  let pk: KeyObject;
  try {
    pk = createPrivateKey(key);
  } catch {
    // The parser's message could quote the file: say only what it is not.
    throw new TlsError(listener, `${listener}.tls_key_file ${keyFile} holds no unencrypted PEM private key — point it at the certificate's key (PEM, without a passphrase)`);
  }
  if (!x509.checkPrivateKey(pk)) {
    throw new TlsError(listener, `${listener}.tls_key_file ${keyFile} is not the key of the certificate in ${listener}.tls_cert_file ${certFile} — install the key that was issued with this certificate`);
  }
  return { certFile, keyFile, cert, key, fingerprint: x509.fingerprint256, validTo: x509.validTo };
}

/** uWS's SSLApp options: it reads the files itself (TLS 1.2 minimum in uSockets). */
export function uwsTlsOptions(p: TlsPair): { cert_file_name: string; key_file_name: string } {
  return { cert_file_name: p.certFile, key_file_name: p.keyFile };
}
