import { describe, expect, it } from 'vitest';
import { federatedGroups, rolesFromAttribute } from '#functions/coordinator/federated-groups.js';

describe('the roles claim of a federated identity provider', () => {
  it('reads Cognito’s list form, a JSON array, and comma- or space-separated strings alike', () => {
    for (const value of [
      '[admin, SD_AAAAAAAA]',
      '["admin","SD_AAAAAAAA"]',
      'admin,SD_AAAAAAAA',
      'admin SD_AAAAAAAA',
    ])
      expect(rolesFromAttribute(value), value).toEqual(['admin', 'SD_AAAAAAAA']);
  });

  it('drops empty values, repeats and names a token cannot carry', () => {
    expect(rolesFromAttribute(undefined)).toEqual([]);
    expect(rolesFromAttribute('  ')).toEqual([]);
    expect(rolesFromAttribute('[admin, admin, , "x y", a"b]')).toEqual(['admin']);
  });

  it('adds the roles to the person’s own groups, once each', () => {
    expect(federatedGroups(['SD_BBBBBBBB'], '[admin, SD_BBBBBBBB]')).toEqual(['SD_BBBBBBBB', 'admin']);
    expect(federatedGroups(['admin'], undefined)).toEqual(['admin']);
  });
});
