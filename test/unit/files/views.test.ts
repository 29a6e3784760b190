import { describe, expect, it } from 'vitest';
import { contentDisposition } from '#functions/files/views.js';

describe('Content-Disposition', () => {
  it('names the file in ASCII and exactly in UTF-8', () => {
    expect(contentDisposition('résumé "v2".pdf')).toBe(
      `attachment; filename="r_sum_ _v2_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf`,
    );
    expect(contentDisposition("it's (1).txt")).toBe(
      `attachment; filename="it's (1).txt"; filename*=UTF-8''it%27s%20%281%29.txt`,
    );
  });
});
