import type { Settings } from './settings.js';

/**
 * Custom domains (docs/deploy.md, "Custom domains"): each API and the dashboard may have one, given with its ACM
 * certificate. An API's domain is also its public base URL (absolute links), unless coordinatorBaseUrl or
 * filesBaseUrl say otherwise.
 */
export type Api = 'coordinator' | 'files';

export function customDomain(s: Settings, api: Api): { name: string; certificateArn: string } | undefined {
  const name = s[`${api}DomainName`];
  const certificateArn = s[`${api}CertificateArn`];
  return name && certificateArn ? { name, certificateArn } : undefined;
}

/** PUBLIC_BASE_URL of an API's functions: the setting, else its custom domain, else none (the request's host). */
export function publicBaseUrl(s: Settings, api: Api): { PUBLIC_BASE_URL?: string } {
  const url = s[`${api}BaseUrl`] ?? (s[`${api}DomainName`] ? `https://${s[`${api}DomainName`]}` : undefined);
  return url ? { PUBLIC_BASE_URL: url } : {};
}

/** The URL people and the dashboard use for an API: its public base URL when there is one, else `fallback`. */
export const apiUrl = (s: Settings, api: Api, fallback: string) =>
  publicBaseUrl(s, api).PUBLIC_BASE_URL ?? fallback;
