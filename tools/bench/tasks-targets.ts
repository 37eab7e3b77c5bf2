// bench:tasks (./tasks.ts), the issue 23 target lines: one PASS/FAIL line per target and store, from the figures the
// run measured (ratios of the same run).
//   - tasks/get: ≥ 0.5× the floor's rate (bare node:http answering the same bytes) and ≥ 3× the @a2a-js/sdk server's
//     (InMemoryTaskStore, its faster store), per gateway store and concurrency; the server CPU per request ratio is
//     printed next to them.
//   - a turn (message/send): the gateway's CPU per turn ≤ 2× the floor proxy's, and its added p50 latency (over the
//     direct baseline) ≤ 1.5× the floor's.

/** GetTask figures of one target: median req/s per concurrency and server CPU µs per request. */
export interface GetFigure {
  label: string;
  rates: Map<number, number>;
  cpuUs: number;
}
export interface GetFigures {
  gateways: GetFigure[];
  floor?: GetFigure;
  sdk?: GetFigure;
}

const verdict = (ok: boolean): string => (ok ? "PASS" : "FAIL");
const x = (v: number): string => `${v.toFixed(2)}×`;

export function getTaskTargets(f: GetFigures): string[] {
  const { floor, sdk } = f;
  if (floor === undefined || sdk === undefined) return ["   (GetTask targets: no floor or SDK figures)"];
  const out: string[] = [];
  for (const g of f.gateways) {
    for (const [conc, r] of g.rates) {
      const vsFloor = r / floor.rates.get(conc)!;
      const vsSdk = r / sdk.rates.get(conc)!;
      out.push(
        `   ${verdict(vsFloor >= 0.5)}  tasks/get ≥ 0.5× the bare node:http floor, ${g.label.trim()} @${conc}: ${x(vsFloor)} of its rate (server CPU per request: floor ${Math.round(floor.cpuUs)} µs / gateway ${Math.round(g.cpuUs)} µs = ${x(floor.cpuUs / g.cpuUs)})`,
        `   ${verdict(vsSdk >= 3)}  tasks/get ≥ 3× the @a2a-js/sdk server (InMemoryTaskStore), ${g.label.trim()} @${conc}: ${x(vsSdk)} of its rate (server CPU per request: SDK ${Math.round(sdk.cpuUs)} µs / gateway ${Math.round(g.cpuUs)} µs = ${x(sdk.cpuUs / g.cpuUs)})`,
      );
    }
  }
  return out;
}

/** One message/send mode of part 1: gateway CPU ms per turn and added p50 latency over the direct baseline. */
export interface TurnFigure {
  label: string;
  cpuMs: number;
  addedP50: number;
}

export function turnTargets(gateways: TurnFigure[], floor: TurnFigure): string[] {
  const out: string[] = [];
  for (const g of gateways) {
    out.push(
      `   ${verdict(g.cpuMs <= 2 * floor.cpuMs)}  a turn's gateway CPU ≤ 2× the floor's, ${g.label.trim()}: ${g.cpuMs.toFixed(2)} ms against ${floor.cpuMs.toFixed(2)} ms (${x(g.cpuMs / floor.cpuMs)})`,
      `   ${verdict(g.addedP50 <= 1.5 * floor.addedP50)}  added p50 latency ≤ 1.5× the floor's, ${g.label.trim()}: ${g.addedP50.toFixed(2)} ms against ${floor.addedP50.toFixed(2)} ms (${x(g.addedP50 / floor.addedP50)})`,
    );
  }
  return out;
}
