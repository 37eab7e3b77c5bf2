// The credentials file (A2A_CREDENTIALS_FILE) as a store that `opencode-a2a keys` writes and the gateway reads.
// Every change runs under an exclusive lock (<file>.lock), validates the file before and after with the gateway's
// own loader (./credentials.ts), and replaces the file atomically (temp file with mode 0600, fsync, rename). Only a
// new secret's SHA-256 hash is ever written.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AccessControl } from "../contract/catalog.js";
import { CredentialError, generateSecret, loadCredentials, readCredentialsFile, secretHash, type CredentialEntry } from "./credentials.js";

/** A change was refused or failed; nothing was written. The message never contains a secret. */
export class KeyStoreError extends Error {}

const LOCK_STALE_MS = 30_000;
const LOCK_WAIT_MS = 15_000;

/** Reads and validates the file with the gateway's loader (a missing file is empty). */
export function readKeys(file: string, access: AccessControl): unknown[] {
  const entries = readCredentialsFile(file);
  loadCredentials(entries, file, access);
  return entries;
}

/**
 * Appends `entry` with a new secret, of which only the hash is stored. An empty `entry.id` gets a fresh
 * `key_<8 hex>`; `reserved` are ids taken elsewhere (A2A_CREDENTIALS). `user` makes a basic secret `user:<generated>`.
 */
export async function addKey(
  file: string,
  access: AccessControl,
  entry: Omit<CredentialEntry, "secret_hash">,
  opts: { user: string | undefined; reserved: ReadonlySet<string> },
): Promise<{ id: string; secret: string }> {
  ensureDirectory(path.dirname(file));
  let id = entry.id;
  let secret = "";
  await withLock(file, () =>
    change(file, access, (entries) => {
      const ids = new Set([...opts.reserved, ...entries.map((e) => (e as { id?: unknown }).id).filter((i): i is string => typeof i === "string")]);
      if (id !== "") {
        if (ids.has(id)) throw new KeyStoreError(`credential id ${JSON.stringify(id)} already exists in ${file}`);
      } else {
        do id = `key_${randomBytes(4).toString("hex")}`;
        while (ids.has(id));
      }
      secret = opts.user === undefined ? generateSecret() : `${opts.user}:${generateSecret()}`;
      // Field order as shown in the file: the hash goes where the secret would be.
      const { id: _unset, principal, scheme, trust_level, ...more } = entry;
      return [...entries, { id, principal, scheme, secret_hash: secretHash(secret), trust_level, ...more }];
    }),
  );
  return { id, secret };
}

/** Sets `"enabled": false` and keeps the entry; `changed` is false when it was already revoked. */
export function revokeKey(file: string, access: AccessControl, id: string): Promise<{ changed: boolean; enabledLeft: number }> {
  return editKey(file, access, id, (entries, index) => {
    const current = entries[index] as Record<string, unknown>;
    if (current.enabled === false) return null;
    return entries.map((e, i) => (i === index ? { ...current, enabled: false } : e));
  });
}

/** Removes the entry. */
export function deleteKey(file: string, access: AccessControl, id: string): Promise<{ changed: boolean; enabledLeft: number }> {
  return editKey(file, access, id, (entries, index) => entries.filter((_, i) => i !== index));
}

/** Applies `edit` (null = nothing to change) to the entry with `id`; counts the enabled entries the file keeps. */
async function editKey(
  file: string,
  access: AccessControl,
  id: string,
  edit: (entries: unknown[], index: number) => unknown[] | null,
): Promise<{ changed: boolean; enabledLeft: number }> {
  if (lstatOrUndefined(file) === undefined) throw new KeyStoreError(`no credential with id ${JSON.stringify(id)}: ${file} does not exist`);
  let changed = true;
  let enabledLeft = 0;
  await withLock(file, () =>
    change(file, access, (entries) => {
      const index = entries.findIndex((e) => (e as { id?: unknown }).id === id);
      if (index < 0) throw new KeyStoreError(`no credential with id ${JSON.stringify(id)} in ${file}`);
      const next = edit(entries, index);
      changed = next !== null;
      enabledLeft = (next ?? entries).filter((e) => (e as { enabled?: unknown }).enabled !== false).length;
      return next;
    }),
  );
  return { changed, enabledLeft };
}

function lstatOrUndefined(file: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

function ensureDirectory(dir: string): void {
  const st = lstatOrUndefined(dir);
  if (st === undefined) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  else if (!fs.statSync(dir).isDirectory()) throw new KeyStoreError(`${dir} is not a directory`);
}

/**
 * Under the lock: refuse a symlink or non-regular file, validate the current content, apply `edit` (null = nothing
 * to write), validate the result, and replace the file atomically.
 */
function change(file: string, access: AccessControl, edit: (entries: unknown[]) => unknown[] | null): void {
  const st = lstatOrUndefined(file);
  if (st?.isSymbolicLink()) throw new KeyStoreError(`${file} is a symbolic link; refusing to write through it (point --file at the real file)`);
  if (st !== undefined && !st.isFile()) throw new KeyStoreError(`${file} is not a regular file`);
  let entries: unknown[];
  try {
    entries = st === undefined ? [] : readKeys(file, access);
  } catch (e) {
    if (e instanceof CredentialError) throw new KeyStoreError(`${file} does not load; fix it first:\n${problemList(e)}\nNothing was written.`);
    throw e;
  }
  const next = edit(entries);
  if (next === null) return;
  try {
    loadCredentials(next, file, access);
  } catch (e) {
    if (e instanceof CredentialError) throw new KeyStoreError(`the changed file would not load:\n${problemList(e)}\nNothing was written.`);
    throw e;
  }
  writeAtomically(file, `${JSON.stringify(next, null, 2)}\n`, st);
}

function problemList(e: CredentialError): string {
  return e.problems.map((p) => `  - ${p}`).join("\n");
}

function writeAtomically(file: string, text: string, previous: fs.Stats | undefined): void {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = fs.openSync(tmp, "wx", 0o600);
  try {
    fs.fchmodSync(fd, 0o600); // whatever the umask
    // Run as root on a file owned by the gateway's user: keep the owner, or the gateway could no longer read it.
    if (previous !== undefined && process.getuid?.() === 0 && (previous.uid !== 0 || previous.gid !== 0)) fs.fchownSync(fd, previous.uid, previous.gid);
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(tmp, file);
  } catch (e) {
    try {
      fs.closeSync(fd);
    } catch {
      // already closed
    }
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  // Make the rename itself durable (best effort: not every platform can fsync a directory).
  try {
    const dfd = fs.openSync(dir, "r");
    try {
      fs.fsyncSync(dfd);
    } finally {
      fs.closeSync(dfd);
    }
  } catch {
    // ignore
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Exclusive `<file>.lock` (O_CREAT|O_EXCL), retried for a while; a lock older than 30 s is taken over. */
async function withLock<T>(file: string, fn: () => T): Promise<T> {
  const lock = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  let fd: number | undefined;
  for (;;) {
    try {
      fd = fs.openSync(lock, "wx", 0o600);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    breakStaleLock(lock);
    if (Date.now() > deadline)
      throw new KeyStoreError(`${lock} is held by another \`keys\` command; if none is running, remove the lock file (it is taken over after ${LOCK_STALE_MS / 1000} s)`);
    await sleep(10 + Math.floor(Math.random() * 40));
  }
  const mine = fs.fstatSync(fd).ino;
  try {
    try {
      fs.writeFileSync(fd, `${process.pid} ${os.hostname()} ${new Date().toISOString()}\n`);
    } finally {
      fs.closeSync(fd);
    }
    return fn();
  } finally {
    try {
      if (fs.lstatSync(lock).ino === mine) fs.unlinkSync(lock);
    } catch {
      // gone already
    }
  }
}

function breakStaleLock(lock: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(lock);
  } catch {
    return;
  }
  if (Date.now() - st.mtimeMs < LOCK_STALE_MS) return;
  // Move it aside first, so two processes breaking the same stale lock cannot remove a fresh one.
  const aside = `${lock}.stale.${process.pid}.${randomBytes(4).toString("hex")}`;
  try {
    fs.renameSync(lock, aside);
  } catch {
    return;
  }
  try {
    if (fs.lstatSync(aside).ino !== st.ino) {
      // Someone took the lock between our stat and rename: give it back (fails harmlessly if a third one holds it).
      try {
        fs.linkSync(aside, lock);
      } catch {
        // ignore
      }
    }
  } finally {
    fs.rmSync(aside, { force: true });
  }
}
