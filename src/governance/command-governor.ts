// A command governor (spec: GovernorKind.command): the configured program, started without a shell in the task's
// directory, reads the turn's diff on stdin and prints one JSON object `{status, messages, followUpPrompt?}`. Its
// environment is built from nothing: PATH, HOME and LANG of the gateway, the A2A_GOVERNOR_* variables and the
// governor's `env` (the gateway's credentials never reach it). Output is bounded; on timeout or cancel the program
// gets SIGTERM, then SIGKILL.
import { spawn } from "node:child_process";
import { findExecutable } from "./policies.js";
import { abortReason, directoryOf, type GovernorRun, type RunOutcome } from "./governor-run.js";

/** The most stdout that is read (a longer answer is refused); the stderr tail kept for the trail. */
const STDOUT_MAX_BYTES = 1024 * 1024;
const STDERR_TAIL_BYTES = 2048;
/** How long a program has between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;

/** The program's environment: nothing of the gateway's but PATH, HOME and LANG. */
export function governorEnv(run: Pick<GovernorRun, "governor" | "subject" | "input" | "deps">): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "LANG"]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, {
    A2A_GOVERNOR_ID: run.governor.id,
    A2A_GOVERNOR_ROUND: String(run.input.round),
    A2A_GOVERNOR_TASK_ID: run.subject.taskId,
    A2A_GOVERNOR_CONTEXT_ID: run.subject.contextId,
    A2A_GOVERNOR_SESSION_ID: run.subject.sessionId,
    A2A_GOVERNOR_DIRECTORY: directoryOf(run),
  });
  return { ...env, ...run.governor.env };
}

export function runCommandGovernor(run: GovernorRun): Promise<RunOutcome> {
  const [name, ...args] = run.governor.command ?? [];
  // Checked at load; checked again here because the file may have gone since.
  const executable = name === undefined ? undefined : findExecutable(name);
  if (executable === undefined) return Promise.resolve({ details: {}, error: `command "${name ?? ""}" is not an executable file or a name on PATH` });
  return new Promise((resolve) => {
    const child = spawn(executable, args, { cwd: directoryOf(run), env: governorEnv(run), stdio: ["pipe", "pipe", "pipe"] });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let overflow = false;
    let stderr = Buffer.alloc(0);
    let killer: NodeJS.Timeout | undefined;
    let stopped: string | undefined;
    const stop = (): void => {
      stopped ??= abortReason(run);
      child.kill("SIGTERM");
      killer ??= setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
      killer.unref();
    };
    if (run.signal.aborted) stop();
    else run.signal.addEventListener("abort", stop, { once: true });
    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > STDOUT_MAX_BYTES) {
        overflow = true;
        child.kill("SIGKILL");
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > STDERR_TAIL_BYTES) stderr = stderr.subarray(stderr.length - STDERR_TAIL_BYTES);
    });
    // A program that does not read its stdin closes the pipe: that is not its failure.
    child.stdin.on("error", () => undefined);
    child.stdin.end(run.patch);
    let spawnError: string | undefined;
    child.on("error", (error) => (spawnError = error.message));
    child.on("close", (code, signal) => {
      run.signal.removeEventListener("abort", stop);
      if (killer !== undefined) clearTimeout(killer);
      const details: Record<string, unknown> = { exit_code: code, ...(signal === null ? {} : { signal }) };
      const tail = stderr.toString("utf8").trim();
      if (tail !== "") details.stderr = tail;
      if (spawnError !== undefined) return resolve({ details, error: `could not start: ${spawnError}` });
      if (stopped !== undefined) return resolve({ details, error: stopped });
      if (overflow) return resolve({ details, error: `it printed more than ${STDOUT_MAX_BYTES} bytes` });
      const text = Buffer.concat(stdout).toString("utf8").trim();
      try {
        return resolve({ answer: JSON.parse(text), details });
      } catch {
        const why = code === 0 ? "it printed no JSON object" : `it exited with code ${code ?? signal} and printed no JSON object`;
        return resolve({ details, error: why });
      }
    });
  });
}
