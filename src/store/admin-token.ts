/**
 * The admin token, generated once into data_dir/admin.token, then reused.
 * Created 0600 minus the umask (never readable by others, even briefly), then
 * made exactly 0600; a looser file of ours is tightened (another user's is
 * left to Store.open's warning on the directory).
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DATA_FILE_MODE, restrictToOwner } from './db.js';

export function adminTokenFile(dataDir: string): string {
  const file = join(dataDir, 'admin.token');
  if (existsSync(file)) {
    restrictToOwner(file, DATA_FILE_MODE);
    return readFileSync(file, 'utf8').trim();
  }
  const token = randomBytes(24).toString('base64url');
  // 'wx': a file that appeared meanwhile is never overwritten (nor its token silently replaced).
  writeFileSync(file, token + '\n', { mode: DATA_FILE_MODE, flag: 'wx' });
  chmodSync(file, DATA_FILE_MODE);
  return token;
}
