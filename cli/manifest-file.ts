import { readFileSync } from 'node:fs';
import { UsageError } from './config.js';

/**
 * What `drc files download --manifest FILE` reads: a study's manifest as the file service answers it (the JSON
 * envelope, or its `results` array, or the TSV with its header line; pages saved one after another are fine), or a
 * plain list of objects, one per line: `drs://<host>/<id>` URIs or bare version ids (`FV_…`). Blank lines and lines
 * starting with `#` are skipped. Each item names a DRS object; what the file does not say (name, size, SHA-256) is
 * asked of the DRS API.
 */
export interface ManifestItem {
  /** What DRS resolves: the version id, or the `drs://` URI. */
  objectId: string;
  fileId?: string;
  versionId?: string;
  name?: string;
  size?: number;
  sha256?: string;
  createdAt?: string;
}

const text = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
const integer = (v: unknown) => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/** A row of the manifest (JSON object or TSV line) as an item; the line number names it in errors. */
function item(row: Record<string, unknown>, where: string): ManifestItem {
  const versionId = text(row.version_id);
  const drsUri = text(row.drs_uri);
  const objectId = versionId ?? drsUri;
  if (!objectId) throw new UsageError(`${where} names neither a version_id nor a drs_uri`);
  const sha256 = text(row.sha256)?.toLowerCase();
  return {
    objectId,
    fileId: text(row.file_id),
    versionId,
    name: text(row.name),
    size: integer(row.size),
    sha256: sha256 && /^[0-9a-f]{64}$/.test(sha256) ? sha256 : undefined,
    createdAt: text(row.created_at),
  };
}

function fromJson(value: unknown, where: string): ManifestItem[] {
  const rows = Array.isArray(value)
    ? value
    : Array.isArray((value as { results?: unknown })?.results)
      ? (value as { results: unknown[] }).results
      : null;
  if (!rows) throw new UsageError(`${where}: JSON that is neither a manifest nor a list of its rows`);
  return rows.map((r, i) => {
    if (typeof r === 'string') return { objectId: r.trim() };
    if (typeof r !== 'object' || r === null) throw new UsageError(`${where}: row ${i + 1} is not an object`);
    return item(r as Record<string, unknown>, `${where}: row ${i + 1}`);
  });
}

/** TSV with a header line; a header repeated further down (pages saved one after another) starts anew. */
function fromTsv(lines: string[], where: string): ManifestItem[] {
  let header: string[] = [];
  const out: ManifestItem[] = [];
  lines.forEach((line, i) => {
    const cells = line.split('\t');
    if (cells.includes('version_id') || cells.includes('drs_uri')) {
      header = cells;
      return;
    }
    out.push(item(Object.fromEntries(header.map((h, j) => [h, cells[j]])), `${where}: line ${i + 1}`));
  });
  return out;
}

export function parseManifest(content: string, where = 'the manifest'): ManifestItem[] {
  const trimmed = content.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    // One JSON document, or several (pages saved one after another), each on its own.
    const docs = trimmed.startsWith('[') ? [trimmed] : trimmed.split(/\n(?=\{)/);
    return docs.flatMap((d) => {
      try {
        return fromJson(JSON.parse(d), where);
      } catch (err) {
        if (err instanceof UsageError) throw err;
        throw new UsageError(`${where}: not valid JSON (${(err as Error).message})`);
      }
    });
  }
  const lines = trimmed
    .split(/\r?\n/)
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '' && !l.startsWith('#'));
  if (lines.some((l) => l.includes('\t'))) return fromTsv(lines, where);
  return lines.map((l, i) => {
    const id = l.trim();
    if (!/^(drs:\/\/\S+|FV_\w+|SF_\w+)$/.test(id))
      throw new UsageError(
        `${where}: line ${i + 1} is neither a drs:// URI nor a version id: ${id.slice(0, 80)}`,
      );
    return { objectId: id };
  });
}

export function readManifest(path: string): ManifestItem[] {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the manifest ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  const items = parseManifest(content, path);
  if (items.length === 0) throw new UsageError(`the manifest ${path} names no file`);
  return items;
}
