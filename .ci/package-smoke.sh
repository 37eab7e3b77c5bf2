#!/usr/bin/env bash
# Package smoke test (also run alone: `npm run package:smoke`): npm pack, install the tarball as a global install into
# a temporary prefix with the command the README documents, start `opencode-a2a serve` from there against the stub
# OpenCode, fetch the public agent card and the contract artifacts, stop it. (--strict-allow-scripts is not used: it
# also flags this package's own `prepare`, which npm never runs for a tarball.) Also: the same tarball installed with its install scripts skipped must refuse to
# start with exit code 78 and name the fix. Nothing from the checkout is used by the installed gateway; the temporary
# directory is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d "${TMPDIR:-/tmp}/opencode-a2a-pkg.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for FILE REGEX SECONDS: prints the first match of REGEX in FILE once it appears.
wait_for() {
  local file="$1" regex="$2" deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    if grep -Eo "$regex" "$file" 2>/dev/null | head -n1 | grep .; then return 0; fi
    sleep 0.2
  done
  echo "timed out waiting for /$regex/ in $file:" >&2
  cat "$file" >&2
  return 1
}

echo "== npm pack"
npm pack --pack-destination "$work" --loglevel=error >"$work/pack.log"
tarball="$(ls "$work"/opencode-a2a-*.tgz)"
tar -tzf "$tarball" | sed 's|^package/||' | sort >"$work/contents"
echo "$(basename "$tarball"): $(wc -l <"$work/contents") files, $(du -h "$tarball" | cut -f1)"
for required in package.json README.md bin/opencode-a2a.js bin/opencode-a2a-guardian.mjs dist/src/main.js dist/bundle/main.js \
  generated/contract/catalog.json generated/openapi/openapi.json generated/openapi/openapi.yaml; do
  grep -qx "$required" "$work/contents" || { echo "missing from the tarball: $required" >&2; exit 1; }
done
if grep -E '^(src|test|tools|spec|node_modules)/|\.map$|\.tsbuildinfo$' "$work/contents"; then
  echo "the tarball carries files the installed package does not need (above)" >&2
  exit 1
fi

echo "== npm install -g --allow-scripts=better-sqlite3,opencode-ai (temporary prefix)"
prefix="$work/prefix"
npm install -g --prefix "$prefix" --allow-scripts=better-sqlite3,opencode-ai --no-audit --no-fund --loglevel=error "$tarball"
bin="$prefix/bin/opencode-a2a"
"$bin" --version
installed="$prefix/lib/node_modules/opencode-a2a"
node -e "import('$installed/dist/src/upstream/binary.js').then((m) => console.log('managed mode would run', m.resolveOpencodeBinary()))"

echo "== stub OpenCode"
node --import tsx tools/upstream/stub.ts --port 0 >"$work/stub.log" 2>&1 &
pids+=($!)
upstream="$(wait_for "$work/stub.log" 'http://127\.0\.0\.1:[0-9]+' 60)"
echo "stub at $upstream"

echo "== opencode-a2a serve from the installed package"
mkdir "$work/run"
token="package-smoke-$RANDOM$RANDOM"
(cd "$work/run" && exec env -i PATH="$PATH" HOME="$work/run" A2A_PORT=0 A2A_BEARER_TOKEN="$token" \
  OPENCODE_BASE_URL="$upstream" A2A_TASK_STORE_DATABASE_URL="sqlite:////$work/run/a2a.db" A2A_LOG_LEVEL=warn \
  "$bin" serve) >"$work/serve.log" 2>&1 &
gateway=$!
pids+=($gateway)
url="$(wait_for "$work/serve.log" 'opencode-a2a listening on http://[^ ]+' 60 | sed 's/.* on //')"
echo "gateway at $url"

curl -fsS "$url/.well-known/agent-card.json" >"$work/card.json"
node -e '
const card = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (!Array.isArray(card.supportedInterfaces) || card.supportedInterfaces.length === 0) throw new Error("agent card without supportedInterfaces");
console.log("agent card:", card.name, card.supportedInterfaces.map((i) => `${i.protocolBinding ?? i.transport} ${i.protocolVersion ?? ""}`.trim()).join(", "));
' "$work/card.json"
curl -fsS "$url/openapi.json" | node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>{const d=JSON.parse(s);if(!d.openapi)throw new Error("no openapi");console.log("openapi.json", d.openapi)})'
curl -fsS "$url/schemas/v1_0/AgentCard.json" | node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>{JSON.parse(s);console.log("schemas/v1_0/AgentCard.json ok")})'
health="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$url/health")"
[ "$health" = 200 ] || { echo "/health answered $health" >&2; cat "$work/serve.log" >&2; exit 1; }
echo "/health 200"

kill -TERM "$gateway"
status=0
wait "$gateway" || status=$?
[ "$status" = 0 ] || { echo "gateway exited $status after SIGTERM" >&2; cat "$work/serve.log" >&2; exit 1; }
echo "gateway stopped (exit 0)"

echo "== the same tarball installed with its install scripts skipped (--ignore-scripts)"
bare="$work/bare"
mkdir -p "$bare"
npm install -g --prefix "$bare" --ignore-scripts --no-audit --no-fund --loglevel=error "$tarball" >/dev/null 2>&1
status=0
(cd "$work/run" && exec timeout 60 env -i PATH="$PATH" HOME="$work/run" A2A_PORT=0 A2A_BEARER_TOKEN="$token" \
  OPENCODE_BASE_URL="$upstream" "$bare/bin/opencode-a2a" serve) >"$work/bare.log" 2>&1 || status=$?
if [ "$status" != 78 ] || ! grep -q "npm install -g --allow-scripts=better-sqlite3,opencode-ai" "$work/bare.log"; then
  echo "expected exit 78 naming the reinstall command, got $status:" >&2
  cat "$work/bare.log" >&2
  exit 1
fi
echo "refused with exit 78: $(head -c 160 "$work/bare.log" | tr '\n' ' ')…"
echo "== package smoke test passed"
