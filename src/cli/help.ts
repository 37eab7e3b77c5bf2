// Help text of `opencode-a2a --help` and `opencode-a2a serve --help`. The configuration part is generated from
// `variables` in src/config/index.ts (name, default, description), so it lists exactly what the gateway reads.
import { variables } from "../config/index.js";

interface DescribedVariable {
  name: string;
  defaultText: string;
  description: string;
}

function wrap(text: string, indent: string, width = 100): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(indent + line);
  return lines;
}

/** Every configuration variable: `  NAME (default: VALUE)` and its description below, in the config module's order. */
export function configurationHelp(): string {
  const lines = [
    "Configuration: environment variables (a ./.env file in the working directory is read too; the environment wins).",
    "A default of — means unset.",
    "",
  ];
  lines.push(variablesHelp());
  return lines.join("\n");
}

/** The variables whose names start with `prefix` (default: all): `  NAME (default: VALUE)` and the description below. */
export function variablesHelp(prefix = ""): string {
  const lines: string[] = [];
  for (const v of Object.values(variables) as DescribedVariable[]) {
    if (!v.name.startsWith(prefix)) continue;
    lines.push(`  ${v.name} (default: ${v.defaultText})`);
    lines.push(...wrap(v.description.replace(/`/g, ""), "      "));
  }
  return lines.join("\n");
}
