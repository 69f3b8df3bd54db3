/**
 * The identity the QUIC client presents to leaders (docs/protocol.md#forwarding):
 * an ed25519 key, from a Solana CLI keypair file (a staked identity gets
 * stake-weighted QoS) or made for this start (unstaked), and a self-signed
 * X.509 certificate for it. Validators read only the public key out of the
 * certificate, so it carries what Agave's own client certificate carries: the
 * key, a fixed name, `localhost` as its alternative name, a validity far into
 * the future.
 *
 * Node can make and use ed25519 keys but not write certificates; the DER is
 * written here (a dozen fixed ASN.1 shapes) rather than taking an X.509
 * library for one certificate per start. Node's own X509Certificate parses and
 * verifies the result (test/tpu/identity.test.ts).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import bs58 from 'bs58';

export interface TpuIdentity {
  /** base58 public key: the validator's view of who is sending. */
  pubkey: string;
  /** PEM, as the QUIC library takes them. */
  keyPem: string;
  certPem: string;
  /** Whether it came from a keypair file (false: made for this start). */
  fromFile: boolean;
}

/** PKCS#8 wrapping of a raw 32-byte ed25519 seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const OID_ED25519 = [0x06, 0x03, 0x2b, 0x65, 0x70];
const OID_COMMON_NAME = [0x06, 0x03, 0x55, 0x04, 0x03];
const OID_SUBJECT_ALT_NAME = [0x06, 0x03, 0x55, 0x1d, 0x11];

/** A Solana CLI keypair file: a JSON array of 64 bytes, the seed then the public key. */
function readKeypairFile(path: string): KeyObject {
  let bytes: unknown;
  try {
    bytes = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`solana.tpu.identity_keypair_file ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!Array.isArray(bytes) || bytes.length !== 64 || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new Error(`solana.tpu.identity_keypair_file ${path}: not a Solana keypair (a JSON array of 64 bytes)`);
  }
  const raw = Buffer.from(bytes as number[]);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, raw.subarray(0, 32)]), format: 'der', type: 'pkcs8' });
  if (!rawPublic(createPublicKey(key)).equals(raw.subarray(32))) {
    throw new Error(`solana.tpu.identity_keypair_file ${path}: its public key does not match its secret key`);
  }
  return key;
}

/** The identity from `file`, or a new one when there is none. */
export function loadIdentity(file: string | null): TpuIdentity {
  const key = file ? readKeypairFile(file) : generateKeyPairSync('ed25519').privateKey;
  const pub = createPublicKey(key);
  const der = selfSignedCertificate(key, pub);
  return {
    pubkey: bs58.encode(rawPublic(pub)),
    keyPem: key.export({ format: 'pem', type: 'pkcs8' }).toString(),
    certPem: `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`,
    fromFile: file !== null && file !== '',
  };
}

/** The 32 raw bytes of an ed25519 public key (the end of its SPKI). */
function rawPublic(pub: KeyObject): Buffer {
  const spki = pub.export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32);
}

// ---- DER ------------------------------------------------------------------------

function tlv(tag: number, body: Uint8Array | number[]): Buffer {
  const b = Buffer.from(body);
  const n = b.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...len]), b]);
}
const seq = (...parts: Uint8Array[]): Buffer => tlv(0x30, Buffer.concat(parts));

/** The certificate in DER: version 3, one serial, the same name as issuer and subject, signed by the key itself. */
function selfSignedCertificate(key: KeyObject, pub: KeyObject): Buffer {
  const alg = seq(Buffer.from(OID_ED25519));
  const name = seq(tlv(0x31, seq(Buffer.from(OID_COMMON_NAME), tlv(0x0c, Buffer.from('Solana node')))));
  // Agave's dates: from 1975 (UTCTime) to 4096 (GeneralizedTime, past 2049).
  const validity = seq(tlv(0x17, Buffer.from('750101000000Z')), tlv(0x18, Buffer.from('40960101000000Z')));
  const san = seq(Buffer.from(OID_SUBJECT_ALT_NAME), tlv(0x04, seq(tlv(0x82, Buffer.from('localhost')))));
  const tbs = seq(
    tlv(0xa0, tlv(0x02, [2])),
    tlv(0x02, [1]),
    alg,
    name,
    validity,
    name,
    pub.export({ format: 'der', type: 'spki' }),
    tlv(0xa3, seq(san)),
  );
  const signature = sign(null, tbs, key);
  return seq(tbs, alg, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
}
