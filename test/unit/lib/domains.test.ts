import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { readSettings } from '#lib/settings.js';
import { CUSTOM_DOMAINS, logicalId, NO_BUNDLING, newApp, OPERATOR_DECISIONS, synth } from './app-fixture.js';

/**
 * Custom domains (lib/domains.ts): each API and the dashboard may have its own name, each with an ACM certificate;
 * the names become the public base URLs, the dashboard's callback and CORS origin.
 *
 * @covers lib/domains.ts
 */
const ENV = { account: '123456789012', region: 'us-east-1' };

describe('custom domains', () => {
  const s = synth(ENV, CUSTOM_DOMAINS);

  it('map each API’s $default stage under its own name, with its certificate, and print the DNS target', () => {
    for (const [template, name, cert, output] of [
      [
        s.coordinator,
        CUSTOM_DOMAINS.coordinatorDomainName,
        CUSTOM_DOMAINS.coordinatorCertificateArn,
        'Coordinator',
      ],
      [s.files, CUSTOM_DOMAINS.filesDomainName, CUSTOM_DOMAINS.filesCertificateArn, 'Files'],
    ] as const) {
      template.hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
        DomainName: name,
        DomainNameConfigurations: [{ CertificateArn: cert, EndpointType: 'REGIONAL' }],
      });
      template.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
      expect(template.findOutputs(`${output}DomainTarget`)).not.toEqual({});
    }
  });

  it('give the functions their public base URL, unless coordinatorBaseUrl or filesBaseUrl say otherwise', () => {
    const urlOf = (t: typeof s.coordinator) =>
      new Set(
        Object.values(t.findResources('AWS::Lambda::Function')).map(
          (f) => f.Properties.Environment.Variables.PUBLIC_BASE_URL,
        ),
      );
    expect(urlOf(s.coordinator)).toEqual(new Set(['https://coordinator.example.org']));
    expect(urlOf(s.files)).toEqual(new Set(['https://files.example.org']));
    const own = synth(ENV, { ...CUSTOM_DOMAINS, filesBaseUrl: 'https://cdn.example.org/files' });
    expect(urlOf(own.files)).toEqual(new Set(['https://cdn.example.org/files']));
  });

  it('serve the dashboard under its name with TLS 1.2 at least, which is Cognito’s callback and the APIs’ origin', () => {
    expect(s.built.dashboard?.url).toBe('https://releases.example.org');
    s.dashboard!.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: {
        Aliases: ['releases.example.org'],
        ViewerCertificate: {
          AcmCertificateArn: CUSTOM_DOMAINS.dashboardCertificateArn,
          MinimumProtocolVersion: 'TLSv1.2_2021',
          SslSupportMethod: 'sni-only',
        },
      },
    });
    const client = s.auth!.toJSON().Resources[logicalId(s.built.auth!.auth.dashboardClient!)].Properties;
    expect(client.CallbackURLs).toEqual(['https://releases.example.org/']);
  });

  it('are refused when a name lacks its certificate, an API’s certificate is in another region, or the dashboard’s is not in us-east-1', () => {
    const settings = (context: Record<string, unknown>) => readSettings(new App({ context }).node);
    expect(() => settings({ filesDomainName: 'files.example.org' })).toThrow(
      /filesCertificateArn: filesDomainName and filesCertificateArn go together/,
    );
    expect(() =>
      settings({
        dashboardDomainName: 'releases.example.org',
        dashboardCertificateArn: CUSTOM_DOMAINS.dashboardCertificateArn.replace('us-east-1', 'eu-west-1'),
      }),
    ).toThrow(/dashboardCertificateArn: CloudFront takes certificates of us-east-1 only/);
    expect(() =>
      buildApp(newApp({ ...NO_BUNDLING, ...OPERATOR_DECISIONS, ...CUSTOM_DOMAINS }), {
        env: { account: '123456789012', region: 'eu-west-1' },
        nag: false,
      }),
    ).toThrow(/certificate of coordinator\.example\.org is in us-east-1; .* its own region, eu-west-1/);
  });
});
