import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text } from "../../tools/upstream/script.js";
import { errorFields, expectError, expectOk, invoke, MODES, sendParams, sendTask, stateOf, taskOfSend, userMessage } from "../support/task-wire.js";

// ---- A2A_ALLOW_DIRECTORY_OVERRIDE=false: only the default directory (the workspace root) is accepted ------------

let g: TaskGateway;
let root: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-locked-root-"));
  fs.mkdirSync(path.join(root, "inside"));
  g = await startTaskGateway({ OPENCODE_WORKSPACE_ROOT: root, A2A_ALLOW_DIRECTORY_OVERRIDE: "false" });
});
afterAll(async () => {
  await g?.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const directoryOf = (r: { query: Record<string, string>; headers: Record<string, unknown> }): unknown => r.query.directory ?? r.headers["x-opencode-directory"];

describe.each(MODES)("locked directory on $name", (m) => {
  it("any directory other than the root is InvalidParams, before anything reaches OpenCode", async () => {
    const from = g.stub.requests.length;
    for (const directory of ["inside", path.join(root, "inside"), os.tmpdir()]) {
      const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, `go to ${directory}`), {}, { opencode: { directory } }));
      const err = await expectError(m, res, "INVALID_PARAMS");
      const { fields, text: detail } = errorFields(m, err);
      expect(fields, detail).toContain("metadata.opencode.directory");
    }
    expect(g.stub.requests.slice(from).filter((r) => r.method === "POST")).toEqual([]);
  });

  it("the root itself is accepted (absolute or relative) and runs in the default directory", async () => {
    const real = fs.realpathSync(root);
    for (const directory of [root, "."]) {
      g.stub.script(text(`root via ${directory}`));
      const from = g.stub.requests.length;
      const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `stay at ${directory}`), {}, { opencode: { directory } }));
      expect(stateOf(task)).toBe("completed");
      const prompt = g.stub.requests.slice(from).find((r) => r.path === `/session/${task.metadata.shared.session.id}/prompt_async`);
      expect(prompt).toBeDefined();
      const dir = directoryOf(prompt!);
      expect(dir === undefined || fs.realpathSync(String(dir)) === real, String(dir)).toBe(true);
    }
  });

  it("metadata.opencode.workspace.id wins over a directory and routes with ?workspace=", async () => {
    g.stub.script(text("in the workspace"));
    const from = g.stub.requests.length;
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "use a workspace"), {}, { opencode: { directory: "inside", workspace: { id: "wrk_test" } } }));
    const task = taskOfSend(m, await expectOk(m, res, "send"));
    expect(stateOf(task)).toBe("completed");
    const calls = g.stub.requests.slice(from).filter((r) => r.method === "POST");
    expect(calls.length).toBeGreaterThan(0);
    for (const r of calls) {
      expect(r.query.workspace, `${r.method} ${r.path}`).toBe("wrk_test");
      expect(r.query.directory).toBeUndefined();
    }
    expect(task.id).toBeTypeOf("string");
  });
});
