/**
 * The metrics' names, namespace default and `service` dimension: what functions/shared/metrics.ts emits and what the
 * CDK dashboard and alarms read (lib/observability.ts). Plain data, so CDK and a bundle that cannot carry the metrics
 * library (FilesGraphql, whose minted signed URLs become the same metric through a log metric filter) can import it.
 */
export const METRIC = {
  releasesCreated: 'ReleasesCreated',
  releasesStaged: 'ReleasesStaged',
  releasesPublished: 'ReleasesPublished',
  releasesFailed: 'ReleasesFailed',
  releasesCanceled: 'ReleasesCanceled',
  /** Milliseconds from a release's creation to staged. */
  timeToStaged: 'ReleaseTimeToStaged',
  /** Milliseconds from POST /releases/<id>/publish to published. */
  timeToPublished: 'ReleaseTimeToPublished',
  /** Per TaskService and Action. */
  actionLatency: 'ActionLatency',
  actionFailures: 'ActionFailures',
  /** Per TaskService. */
  healthCheckFailures: 'HealthCheckFailures',
  /** Per Method (signed_url, token, drs...). */
  downloads: 'Downloads',
  signedUrlsMinted: 'SignedUrlsMinted',
  signedUrlsClaimed: 'SignedUrlsClaimed',
  /** Executions the reconciler had to start, and owed wakes it had to deliver again. */
  reconcilerRedrives: 'ReconcilerRedrives',
  /** Seconds since the oldest non-terminal release was created (the reconciler reads them every minute). */
  oldestActiveReleaseAge: 'OldestActiveReleaseAgeSeconds',
  /**
   * Seconds since the oldest staging or publishing phase at work began (functions/orchestration/phase-limit.ts): what
   * MAX_PHASE_SECONDS limits, and the ReleaseStuck alarm watches.
   */
  oldestPhaseAge: 'OldestPhaseAgeSeconds',
  /** Enabled task services that are down (the health check reports the count every run). */
  taskServicesDown: 'TaskServicesDown',
  activeReleases: 'ActiveReleases',
} as const;

export const DEFAULT_METRICS_NAMESPACE = 'ReleaseCoordinator';

/** The `service` dimension every point carries (Powertools' default dimension). */
export const METRICS_SERVICE = 'release-coordinator';

/** The log line FilesGraphql writes for each signed URL it mints (a metric filter counts it as SignedUrlsMinted). */
export const SIGNED_URL_MINTED_LINE = 'signed url minted';
