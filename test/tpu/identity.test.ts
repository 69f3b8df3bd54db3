/**
 * The TPU client identity (src/tpu/identity.ts): the certificate written by
 * hand is one Node's own X.509 parser reads and verifies, for the key of a
 * Solana CLI keypair file or a key made for the start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bs58 from 'bs58';
import { loadIdentity } from '../../src/tpu/identity.js';
import { newKeypair } from '../helpers/solana.js';

const dir = mkdtempSync(join(tmpdir(), 'txrelay-tpu-id-'));

function certKey(pem: string): string {
  const spki = new X509Certificate(pem).publicKey.export({ format: 'der', type: 'spki' });
  return bs58.encode(spki.subarray(spki.length - 32));
}

test('a keypair file gives its own public key, in a self-signed certificate that verifies', () => {
  const kp = newKeypair();
  const file = join(dir, 'id.json');
  writeFileSync(file, JSON.stringify([...kp.secretKey]));
  const id = loadIdentity(file);
  assert.equal(id.pubkey, kp.publicKey.toBase58());
  assert.equal(id.fromFile, true);
  const cert = new X509Certificate(id.certPem);
  assert.equal(certKey(id.certPem), id.pubkey);
  assert.equal(cert.verify(cert.publicKey), true);
  assert.equal(cert.checkPrivateKey(createPrivateKey(id.keyPem)), true);
  assert.equal(cert.subjectAltName, 'DNS:localhost');
  assert.equal(cert.publicKey.asymmetricKeyType, 'ed25519');
});

test('without a file each start has an identity of its own', () => {
  const a = loadIdentity(null);
  const b = loadIdentity(null);
  assert.notEqual(a.pubkey, b.pubkey);
  assert.equal(a.fromFile, false);
  assert.equal(certKey(a.certPem), a.pubkey);
});

test('a file that is not a keypair, or whose halves do not match, is refused with its path', () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '[1,2,3]');
  assert.throws(() => loadIdentity(bad), /bad\.json: not a Solana keypair/);
  const mixed = join(dir, 'mixed.json');
  writeFileSync(mixed, JSON.stringify([...newKeypair().secretKey.subarray(0, 32), ...newKeypair().publicKey.toBytes()]));
  assert.throws(() => loadIdentity(mixed), /does not match/);
  assert.throws(() => loadIdentity(join(dir, 'absent.json')), /absent\.json/);
});
