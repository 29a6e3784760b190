/**
 * Key layout of the `files` table (pk / sk; gsi1 lists one kind newest first; gsi2 finds an item by its own id, and
 * for audit records, by file). Only the files-* repositories use it.
 *
 *   file           FILE#<file>        / FILE            gsi1 STUDY#<study>#FILES / <created>#<file>   gsi2 <file> / FILE
 *   version        FILE#<file>        / VERSION#<ver>   gsi1 FILE#<file>#VERSIONS / <created>#<ver>   gsi2 <ver> / VERSION
 *   id claim       ID#<version>       / ID              (version ids stay unique although versions live under their file)
 *   signed token   SIGNED#<sha256>    / TOKEN           ttl = expiry (epoch seconds)
 *   dev token      DEVTOKEN#<name>    / TOKEN           gsi1 DEVTOKENS / <created>#<name>      (the name is unique)
 *   dev hash       DEVHASH#<sha256>   / TOKEN           (looks a presented secret up)
 *   audit          AUDIT#<study|->    / <at>#<id>       gsi1 AUDIT / <at>#<id>   gsi2 AUDIT#FILE#<file|-> / <at>#<id>
 *
 * A file and its versions share one partition, so "the latest available version" is one Query.
 */
export const FK = {
  file: (id: string) => ({ pk: `FILE#${id}`, sk: 'FILE' }),
  filePk: (id: string) => `FILE#${id}`,
  filesOfStudy: (studyId: string) => `STUDY#${studyId}#FILES`,
  version: (fileId: string, id: string) => ({ pk: `FILE#${fileId}`, sk: `VERSION#${id}` }),
  versionsOfFile: (fileId: string) => `FILE#${fileId}#VERSIONS`,
  idClaim: (id: string) => ({ pk: `ID#${id}`, sk: 'ID' }),
  signed: (hash: string) => ({ pk: `SIGNED#${hash}`, sk: 'TOKEN' }),
  devToken: (name: string) => ({ pk: `DEVTOKEN#${name}`, sk: 'TOKEN' }),
  devTokens: () => 'DEVTOKENS',
  devHash: (hash: string) => ({ pk: `DEVHASH#${hash}`, sk: 'TOKEN' }),
  auditPk: (studyId: string | null) => `AUDIT#${studyId ?? '-'}`,
  auditAll: () => 'AUDIT',
  auditOfFile: (fileId: string | null) => `AUDIT#FILE#${fileId ?? '-'}`,
  listSk: (createdAt: string, id: string) => `${createdAt}#${id}`,
};
