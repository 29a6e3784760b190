/** S3's request class of a path-style request (bucket first): what its price table calls it. */
export function s3Class(req: { method?: string; url?: string; headers: Record<string, unknown> }): {
  tier: 'tier1' | 'tier2' | 'free';
  op: string;
} {
  const url = new URL(req.url ?? '/', 'http://s3');
  const objectKey = url.pathname.split('/').filter(Boolean).length > 1;
  const q = url.searchParams;
  switch (req.method) {
    case 'PUT':
      if (req.headers['x-amz-copy-source']) return { tier: 'tier1', op: 'CopyObject' };
      return {
        tier: 'tier1',
        op: q.has('partNumber') ? 'UploadPart' : objectKey ? 'PutObject' : 'PutBucket',
      };
    case 'POST':
      if (q.has('uploads')) return { tier: 'tier1', op: 'CreateMultipartUpload' };
      if (q.has('uploadId')) return { tier: 'tier1', op: 'CompleteMultipartUpload' };
      if (q.has('delete')) return { tier: 'tier1', op: 'DeleteObjects' };
      return { tier: 'tier1', op: 'PostObject' };
    case 'GET':
      if (!objectKey || q.has('uploadId') || q.has('uploads') || q.has('list-type'))
        return { tier: 'tier1', op: 'List' };
      return { tier: 'tier2', op: 'GetObject' };
    case 'HEAD':
      return { tier: 'tier2', op: 'HeadObject' };
    case 'DELETE':
      return { tier: 'free', op: q.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject' };
    default:
      return { tier: 'tier2', op: req.method ?? 'unknown' };
  }
}
