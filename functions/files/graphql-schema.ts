import { buildSchema, type GraphQLSchema, printSchema } from 'graphql';

/**
 * The GraphQL schema of POST /graphql (graphql.ts resolves it), in SDL with a description on every type and field.
 * It is published as `GET /graphql/schema.graphql` (handlers/graphql-schema.ts) and committed as
 * openapi/files.graphql by `npm run openapi`; a test keeps the two equal.
 */
export const typeDefs = /* GraphQL */ `
  type Query {
    "Files of a study, newest first. Admins, and members of the study."
    allFiles(studyId: String!, first: Int = 10, after: String): FileConnection!
    "Versions of a file, newest first, pending ones included."
    allVersions(fileId: String!, first: Int = 10, after: String): VersionConnection!
    "A file by its id (SF_…); null for an unknown id or one of a study the caller may not read."
    file(id: String!): File
    "A version by its file id and its own id (FV_…)."
    version(fileId: String!, id: String!): Version
    "Developer tokens, masked. Admins only."
    allDevTokens(first: Int = 10, after: String): DevTokenConnection!
  }

  type Mutation {
    "A single-use download URL, valid for a few seconds. Without versionId it pins the newest available version."
    signedUrl(studyId: String!, fileId: String!, versionId: String): SignedUrl!
    """
    A developer token; the secret is in the answer once and never again. Admins only. expiresAt (an RFC 3339
    instant; default never) and studies (default every study) narrow it.
    """
    createDevToken(name: String!, expiresAt: String, studies: [String!]): CreateDevTokenPayload!
    "Revokes a developer token at once. Admins only."
    deleteDevToken(name: String!): DeleteDevTokenPayload!
  }

  "A study file: a name and its versions, each an upload of its bytes."
  type File {
    "The file id (SF_…), as kfId."
    id: ID!
    "The file id (SF_…)."
    kfId: String!
    "Its study (SD_…)."
    studyId: String!
    "Its display name (by default the file name of its first upload)."
    name: String!
    description: String
    "When it was created, ISO 8601 UTC."
    createdAt: String!
    "Who created it (the token's subject)."
    createdBy: String
    "Whether it can be downloaded: AVAILABLE, or the state of its newest version."
    state: FileState!
    "Downloads the newest available version (needs a bearer or developer token)."
    downloadUrl: String!
    "Its newest available version: what a download serves. Null while it has none."
    latestVersion: Version
    "Its versions, newest first."
    versions(first: Int = 10, after: String): VersionConnection!
  }

  """
  AVAILABLE: one of its versions is available. Otherwise the state of its newest version (PENDING, VERIFYING,
  FAILED), or NO_VERSIONS when it has none left.
  """
  enum FileState {
    AVAILABLE
    PENDING
    VERIFYING
    FAILED
    NO_VERSIONS
  }

  "pending: not confirmed; verifying: a confirmed multipart upload being hashed; then available or failed."
  enum VersionState {
    PENDING
    VERIFYING
    AVAILABLE
    FAILED
  }

  "One upload of a file's bytes. Its bytes never change once it is available."
  type Version {
    "The version id (FV_…), as kfId."
    id: ID!
    "The version id (FV_…)."
    kfId: String!
    "Its file (SF_…)."
    fileId: String!
    "Its study (SD_…)."
    studyId: String!
    "The uploaded file's name: what a download of it is called."
    fileName: String!
    "Bytes. A Float, because GraphQL's Int stops at 2^31 - 1."
    size: Float!
    "Its media type."
    contentType: String!
    "Hex SHA-256 of its bytes, verified against the stored object before it became available."
    sha256: String!
    state: VersionState!
    "When its upload started, ISO 8601 UTC."
    createdAt: String!
    "Who uploaded it."
    uploadedBy: String
    "When its bytes were verified (or refused)."
    confirmedAt: String
    "Downloads this version; null until the upload is confirmed."
    downloadUrl: String
  }

  "A developer download token (docs/downloads.md)."
  type DevToken {
    "Its name, as id."
    id: ID!
    name: String!
    "The secret right after createDevToken; masked everywhere else."
    token: String!
    createdAt: String!
    createdBy: String
    "After this instant the token is refused; null: never."
    expiresAt: String
    "The only studies whose files the token reaches; null: every study."
    studies: [String!]
  }

  "A single-use download link."
  type SignedUrl {
    "Absolute and version-pinned; it works once, with no header."
    url: String!
    "When it stops working, ISO 8601 UTC."
    expiresAt: String!
    "The version it downloads."
    versionId: String!
  }

  type CreateDevTokenPayload {
    token: DevToken!
  }

  type DeleteDevTokenPayload {
    success: Boolean!
    name: String!
  }

  "Relay-style paging: pass endCursor as after for the next page."
  type PageInfo {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
  }

  type FileEdge {
    cursor: String!
    node: File!
  }
  type FileConnection {
    "Every file of the list, over all pages."
    totalCount: Int!
    edges: [FileEdge!]!
    nodes: [File!]!
    pageInfo: PageInfo!
  }
  type VersionEdge {
    cursor: String!
    node: Version!
  }
  type VersionConnection {
    "Every version of the list, over all pages."
    totalCount: Int!
    edges: [VersionEdge!]!
    nodes: [Version!]!
    pageInfo: PageInfo!
  }
  type DevTokenEdge {
    cursor: String!
    node: DevToken!
  }
  type DevTokenConnection {
    totalCount: Int!
    edges: [DevTokenEdge!]!
    nodes: [DevToken!]!
    pageInfo: PageInfo!
  }
`;

/** The executable schema (resolvers come as the root value: graphql.ts). */
export function buildFilesSchema(): GraphQLSchema {
  return buildSchema(typeDefs);
}

/** The schema as SDL, in graphql-js's own printing: what GET /graphql/schema.graphql answers. */
export function schemaSdl(): string {
  return `${printSchema(buildFilesSchema())}\n`;
}
