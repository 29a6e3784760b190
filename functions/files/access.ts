import type { Principal } from '../shared/auth.js';
import { ForbiddenError, UnauthorizedError } from '../shared/errors.js';
import type { AuditMethod } from './model.js';

/**
 * Who is asking, as the file service sees it. A verified JWT gives a user (admin, or a member of the studies in
 * its groups claim); a verified developer token gives a developer, who may download any file and nothing else.
 */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'user'; sub: string | null; isAdmin: boolean; groups: readonly string[] }
  | {
      kind: 'developer';
      name: string;
      /** The studies the token was narrowed to at creation; null: every study. */
      studies: readonly string[] | null;
    };

export const ANONYMOUS_CALLER: Caller = { kind: 'anonymous' };

export function callerOf(principal: Principal): Caller {
  if (principal.kind !== 'user') return ANONYMOUS_CALLER;
  return { kind: 'user', sub: principal.sub, isAdmin: principal.isAdmin, groups: principal.groups };
}

export function isAdmin(caller: Caller): boolean {
  return caller.kind === 'user' && caller.isAdmin;
}

/** The user a record is attributed to (JWT sub), or null. */
export function actorOf(caller: Caller): string | null {
  return caller.kind === 'user' ? caller.sub : null;
}

export function methodOf(caller: Caller): AuditMethod {
  return caller.kind === 'developer' ? 'developer_token' : 'bearer';
}

export function requireAuthenticated(caller: Caller): void {
  if (caller.kind === 'anonymous') throw new UnauthorizedError();
}

/** Whether the caller may read a study's files: admins, members of the study, developer tokens that cover it. */
export function canReadStudy(caller: Caller, studyId: string): boolean {
  if (caller.kind === 'developer') return caller.studies === null || caller.studies.includes(studyId);
  return caller.kind === 'user' && (caller.isAdmin || caller.groups.includes(studyId));
}

/**
 * Read access to a study's files (list, download, mint a signed URL) when the request names the study. It depends
 * only on the caller and the study id, so it runs before any lookup: a member of other studies gets 403 even for a
 * file id that does not exist, and learns nothing about file ids.
 */
export function requireStudyRead(caller: Caller, studyId: string): void {
  requireAuthenticated(caller);
  if (canReadStudy(caller, studyId)) return;
  if (caller.kind === 'developer')
    throw new ForbiddenError(`Developer token ${caller.name} does not cover study ${studyId}`);
  throw new ForbiddenError(`You are not a member of study ${studyId}`);
}

/**
 * Read access to a record found by its own id (GET /files/<fid>, a version): the study is only known after the
 * lookup, so a caller who may not read it gets exactly the answer for an unknown id (`notFound`), never a 403 that
 * would tell which ids exist. Shared by every route that reads records by id.
 */
export function requireVisible(caller: Caller, studyId: string, notFound: () => Error): void {
  requireAuthenticated(caller);
  if (!canReadStudy(caller, studyId)) throw notFound();
}

/** Uploading (new files, new versions, confirmations): admins and members of the study, never developer tokens. */
export function requireStudyWrite(caller: Caller, studyId: string): void {
  requireAuthenticated(caller);
  if (caller.kind === 'user' && (caller.isAdmin || caller.groups.includes(studyId))) return;
  throw new ForbiddenError(
    `Uploading to study ${studyId} requires the admin role or membership of the study`,
  );
}

/**
 * Uploading to a record found by its own id (a new version of a file, a confirmation, fresh upload URLs): as
 * requireVisible, a caller who may not upload to its study gets exactly the answer for an unknown id.
 */
export function requireWritable(caller: Caller, studyId: string, notFound: () => Error): void {
  requireAuthenticated(caller);
  if (caller.kind === 'user' && (caller.isAdmin || caller.groups.includes(studyId))) return;
  throw notFound();
}

export function requireAdmin(caller: Caller): void {
  requireAuthenticated(caller);
  if (!isAdmin(caller)) throw new ForbiddenError('Requires the admin role');
}
