// Reading the xfs_db oracles recorded next to the fixtures.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const FIXTURES = join(process.cwd(), 'tests', 'fixtures');
export const TMP = join(process.cwd(), 'e2e', '.tmp');

/** Names of fixtures with an `xfs_db ... print` superblock oracle. */
export function sbFixtures() {
  return readdirSync(FIXTURES).filter((f) => f.endsWith('.sb.txt')).map((f) => f.slice(0, -'.sb.txt'.length)).sort();
}

/** xfs_db's superblock print as [field, value] pairs. */
export function xfsDbSuperblock(name, suffix = 'sb.txt') {
  const text = readFileSync(join(FIXTURES, `${name}.${suffix}`), 'utf8');
  return text.split('\n').map((l) => l.split(' = ')).filter((p) => p.length === 2).map(([k, v]) => [k.trim(), v.trim()]);
}

const V5_ONLY = new Set(['features_compat', 'features_ro_compat', 'features_incompat', 'features_log_incompat',
  'crc', 'spino_align', 'pquotino', 'lsn', 'meta_uuid']);

/**
 * The text the page must show for each field, derived from xfs_db's value:
 * numbers in decimal, uuids as printed, the label without NULs, the CRC as
 * the little-endian value of the stored bytes (xfs_db prints them as a
 * big-endian word). v5-only fields are skipped on a v4 superblock.
 */
export function expectedFields(name, suffix = 'sb.txt') {
  const pairs = xfsDbSuperblock(name, suffix);
  const version = Number(BigInt(pairs.find(([k]) => k === 'versionnum')[1]) & 0xfn);
  const out = [];
  for (const [k, raw] of pairs) {
    if (version === 4 && V5_ONLY.has(k)) continue;
    let v;
    if (k === 'uuid' || k === 'meta_uuid') v = raw;
    else if (k === 'fname') v = raw.replace(/^"|"$/g, '').replace(/(\\000)+$/, '');
    else if (k === 'crc') {
      const n = Number(BigInt(raw.split(' ')[0]));
      const swapped = ((n & 0xff) << 24 | (n & 0xff00) << 8 | (n >>> 8) & 0xff00 | n >>> 24) >>> 0;
      v = String(swapped);
    } else {
      const t = raw.split(' ')[0];
      v = t === 'null' ? '18446744073709551615' : BigInt(t).toString();
    }
    out.push([k, v]);
  }
  return out;
}

/** xfs_db's inode prints recorded next to a fixture: [{ino, path, fields}] */
export function xfsDbInodes(name, suffix = 'inodes.txt') {
  const text = readFileSync(join(FIXTURES, `${name}.${suffix}`), 'utf8');
  const out = [];
  let cur = null;
  let section = 'print';
  for (const line of text.split('\n')) {
    const m = line.match(/^### ino (\d+) path (.*)$/);
    if (m) {
      cur = { ino: Number(m[1]), path: m[2], fields: {} };
      section = 'print';
      out.push(cur);
      continue;
    }
    if (line.startsWith('### ')) { section = line.slice(4); continue; }
    if (!cur || section !== 'print') continue;
    const i = line.indexOf(' = ');
    if (i > 0) cur.fields[line.slice(0, i)] = line.slice(i + 3);
  }
  return out;
}

/** The kernel's listing of a mounted fixture: one object per path. */
export function kernelListing(name, suffix = 'ls.jsonl') {
  return readFileSync(join(FIXTURES, `${name}.${suffix}`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** The leading number of an xfs_db value ("2 (extents)" -> "2"). */
export function dbNum(v) {
  return String(BigInt(v.split(' ')[0]));
}
