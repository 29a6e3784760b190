/** S3's message out of its XML error body (`<Error><Message>…</Message></Error>`), if the body is one. */
export const s3ErrorMessage = (text: string): string | undefined =>
  /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
