// `opencode-a2a --help`, `serve --help` and `--version` of the built CLI (bin/opencode-a2a.js): the help lists the
// commands and every variable the config module reads, with its default, and never starts the gateway.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { variables } from "../../src/config/index.js";
import { packageRoot } from "../../src/contract/catalog.js";
import { binPath } from "../support/build.js";

const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-help-")); // no stray .env is read
afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

function run(...args: string[]): string {
  // No credentials and no OpenCode: help must not need either.
  return execFileSync(process.execPath, [binPath, ...args], { cwd, env: { PATH: process.env.PATH ?? "" }, encoding: "utf8", timeout: 20_000 });
}

const declared = Object.values(variables) as { name: string; defaultText: string; description: string }[];
const version = (JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8")) as { version: string }).version;

function expectEveryVariable(help: string): void {
  const lines = help.split("\n");
  for (const v of declared) {
    const line = lines.findIndex((l) => l === `  ${v.name} (default: ${v.defaultText})`);
    expect(line, `${v.name} with default ${v.defaultText}`).toBeGreaterThan(-1);
    // The description follows, indented; its first words are there.
    const firstWords = v.description.replace(/`/g, "").split(/\s+/).slice(0, 3).join(" ");
    expect(lines[line + 1], `description of ${v.name}`).toContain(firstWords);
  }
  const listed = lines.map((l) => /^ {2}([A-Z0-9_]+) \(default: /.exec(l)?.[1]).filter(Boolean);
  expect(listed).toEqual(declared.map((v) => v.name));
}

describe("opencode-a2a help", () => {
  it("--help lists the commands and every configuration variable with its default", () => {
    const help = run("--help");
    expect(help).toContain(`opencode-a2a ${version}`);
    for (const command of ["opencode-a2a serve", "opencode-a2a serve --help", "opencode-a2a keys create", "opencode-a2a keys list", "opencode-a2a --version"])
      expect(help).toContain(command);
    expectEveryVariable(help);
    expect(run("-h")).toBe(help);
  });

  it("serve --help lists every configuration variable and does not start the gateway", () => {
    const help = run("serve", "--help");
    expect(help).toMatch(/Usage: opencode-a2a serve/);
    expect(help).not.toMatch(/^opencode-a2a listening on http/m);
    expectEveryVariable(help);
    expect(run("serve", "-h")).toBe(help);
  });

  it("--version prints the package version", () => {
    expect(run("--version")).toBe(`${version}\n`);
    expect(run("-v")).toBe(`${version}\n`);
  });

  it("keys --help is the key commands' own help", () => {
    const help = run("keys", "--help");
    expect(help).toMatch(/keys create/);
    expect(help).not.toContain("(default: ");
  });
});
