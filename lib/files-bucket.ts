import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AnyPrincipal, Effect, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  HttpMethods,
  type IBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { DOWNLOAD_URL_MAX_SECONDS_LIMIT } from '#functions/files/config.js';
import { STAGING_PREFIX, UPLOAD_STAGING_DAYS } from '#functions/files/model.js';

export interface FilesBucketProps {
  removalPolicy: RemovalPolicy;
  /** Days a replaced or deleted object's bytes are kept as a noncurrent version (restorable: npm run restore:object). */
  noncurrentVersionDays: number;
  /** Browser origins allowed to fetch (and upload) objects through presigned URLs; none: no CORS rule. */
  corsOrigins: string[];
}

/**
 * Presigned requests older than this are refused by the bucket itself, whatever expiry the URL claims: 5 minutes for
 * everything but downloads (upload URLs live 5 minutes), and for downloads the longest a presigned GET may be made
 * to live (DOWNLOAD_URL_MAX_SECONDS at its limit, 12 hours; each URL's own expiry is usually far shorter).
 */
export const MAX_SIGNATURE_AGE_MS = 300_000;
export const MAX_DOWNLOAD_SIGNATURE_AGE_MS = DOWNLOAD_URL_MAX_SECONDS_LIMIT * 1000;

/**
 * The study files bucket (docs/deploy.md, What is locked down): private, SSE-S3 encrypted, SSL only, public access blocked, server access
 * logs to a separate bucket, and a policy that refuses presigned requests whose signature is more than 5 minutes
 * old (12 hours for downloads, whose URLs live as long as their object needs). Versioned, so a deleted object (by
 * hand, by a bug, or a file deleted through the API) can be brought back within `noncurrentVersionDays`
 * (docs/operations.md, Bring back a deleted study file); after that its bytes are gone. Every file version has its
 * own key, so a noncurrent version only ever comes from a delete (or from the confirmation's move out of staging/,
 * whose noncurrent copies go after a day).
 */
export class FilesBucket extends Construct {
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;

  constructor(scope: Construct, id: string, props: FilesBucketProps) {
    super(scope, id);
    const destroy = props.removalPolicy === RemovalPolicy.DESTROY;
    const common = {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
      autoDeleteObjects: destroy,
    };

    this.accessLogs = new Bucket(this, 'AccessLogs', {
      ...common,
      lifecycleRules: [{ expiration: Duration.days(365) }],
    });

    this.bucket = new Bucket(this, 'Bucket', {
      ...common,
      versioned: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'files/',
      cors:
        props.corsOrigins.length === 0
          ? undefined
          : [
              {
                allowedMethods: [HttpMethods.GET, HttpMethods.HEAD, HttpMethods.PUT],
                allowedOrigins: props.corsOrigins,
                allowedHeaders: ['*'],
                // ETag lets a browser complete a multipart upload; the others let it read what it downloaded.
                exposedHeaders: [
                  'ETag',
                  'Content-Length',
                  'Content-Range',
                  'Content-Disposition',
                  'Content-Type',
                ],
                maxAge: 3000,
              },
            ],
      // Uploads that are started and never finished would otherwise be billed forever: multipart uploads never
      // completed, and single PUTs never confirmed (they land under staging/, which the confirmation copies from and
      // then empties; UPLOAD_STAGING_DAYS in functions/files/model.ts).
      lifecycleRules: [
        { abortIncompleteMultipartUploadAfter: Duration.days(2) },
        {
          prefix: STAGING_PREFIX,
          expiration: Duration.days(UPLOAD_STAGING_DAYS),
          // A staged upload is copied to its key and deleted: nothing to restore there.
          noncurrentVersionExpiration: Duration.days(1),
        },
        // What a delete leaves behind: restorable for this long, then gone; and the delete markers left alone.
        {
          id: 'NoncurrentVersions',
          noncurrentVersionExpiration: Duration.days(props.noncurrentVersionDays),
          expiredObjectDeleteMarker: true,
        },
      ],
    });

    const presignedOlderThan = (ms: number) => ({
      StringEquals: { 's3:authType': 'REST-QUERY-STRING' },
      NumericGreaterThan: { 's3:signatureAge': ms },
    });
    this.bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyStalePresignedRequests',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        notActions: ['s3:GetObject'],
        resources: [this.bucket.bucketArn, this.bucket.arnForObjects('*')],
        conditions: presignedOlderThan(MAX_SIGNATURE_AGE_MS),
      }),
    );
    this.bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyStalePresignedDownloads',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        actions: ['s3:GetObject'],
        resources: [this.bucket.arnForObjects('*')],
        conditions: presignedOlderThan(MAX_DOWNLOAD_SIGNATURE_AGE_MS),
      }),
    );
  }
}

/**
 * What the file service needs, and nothing else. `read`: GetObject (which also covers HeadObject and presigned
 * GETs). `verify`: GetObject and DeleteObject. `readwrite`: also PutObject (which covers CreateMultipartUpload, UploadPart and CompleteMultipartUpload),
 * AbortMultipartUpload and DeleteObject (DeleteObjects is authorized per key). Both get s3:ListBucket on the bucket
 * itself, so that a missing key answers 404 instead of 403 (the store treats 404 as "not uploaded").
 */
export function grantFileAccess(
  bucket: IBucket,
  grantee: IGrantable,
  level: 'read' | 'readwrite' | 'verify',
): void {
  const actions = {
    read: ['s3:GetObject'],
    // The verification worker reads the object to hash it and deletes it when it does not match.
    verify: ['s3:GetObject', 's3:DeleteObject'],
    readwrite: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:DeleteObject'],
  }[level];
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      sid: 'StudyFileObjects',
      actions,
      resources: [bucket.arnForObjects('*')],
    }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      sid: 'StudyFileMissingKeys',
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
    }),
  );
}
