/** Release versions: dotted three-part numbers (major.minor.patch). */
export interface Version {
  major: number;
  minor: number;
  patch: number;
}

const PATTERN = /^(\d+)\.(\d+)\.(\d+)$/;

export function parseVersion(v: string): Version {
  const m = PATTERN.exec(v);
  if (!m) throw new Error(`not a three-part version: ${v}`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

export const formatVersion = (v: Version) => `${v.major}.${v.minor}.${v.patch}`;

export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  return x.major - y.major || x.minor - y.minor || x.patch - y.patch;
}

/** The provisional version of a new release: next patch after the highest published one, 0.0.1 when none. */
export function provisionalVersion(highestPublished: string | null): string {
  if (!highestPublished) return '0.0.1';
  const v = parseVersion(highestPublished);
  return formatVersion({ ...v, patch: v.patch + 1 });
}

/** The version a release gets when it is published: next major or next minor after the highest published one. */
export function publishedVersion(highestPublished: string | null, isMajor: boolean): string {
  const v = highestPublished ? parseVersion(highestPublished) : { major: 0, minor: 0, patch: 0 };
  return isMajor
    ? formatVersion({ major: v.major + 1, minor: 0, patch: 0 })
    : formatVersion({ major: v.major, minor: v.minor + 1, patch: 0 });
}

/** A string that sorts like the version, for a DynamoDB sort key. */
export function versionSortKey(v: string): string {
  const { major, minor, patch } = parseVersion(v);
  return [major, minor, patch].map((n) => String(n).padStart(6, '0')).join('.');
}
