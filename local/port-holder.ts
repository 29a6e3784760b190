import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Which process listens on a TCP port, read from Linux's /proc (no lsof or ss needed): the listening socket's inode
 * in /proc/net/tcp and tcp6, then the process whose file descriptors include that socket. Only processes of this
 * user can be looked into; null when none of them holds it (or elsewhere than Linux).
 */
export interface PortHolder {
  pid: number;
  /** Its command line, shortened. */
  command: string;
}

const LISTEN = '0A';

function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1].split(':');
      if (Number.parseInt(local[local.length - 1], 16) === port && cols[3] === LISTEN) inodes.add(cols[9]);
    }
  }
  return inodes;
}

export function portHolder(port: number): PortHolder | null {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return null;
  const sockets = new Set([...inodes].map((i) => `socket:[${i}]`));
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's, or gone
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!sockets.has(target)) continue;
      let command = '';
      try {
        command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      } catch {
        // gone meanwhile
      }
      return { pid: Number(pid), command: command.length > 160 ? `${command.slice(0, 157)}...` : command };
    }
  }
  return null;
}

/** "by process 1234 (java -jar DynamoDBLocal.jar ...)", or "" when the holder cannot be told. */
export function heldBy(port: number): string {
  const holder = portHolder(port);
  return holder ? ` by process ${holder.pid} (${holder.command || 'command unknown'})` : '';
}
