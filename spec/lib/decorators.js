// Implementation of the opencode-a2a contract decorators declared in decorators.tsp.
// Each decorator records its value in a program state map; tools/generate reads the maps back to emit
// generated/contract/catalog.json. Keys are global symbols so that the generator, which imports this module
// through the compiler, and any other reader agree on them.
export const namespace = "OpenCodeA2A.Contract";

export const StateKeys = Object.freeze({
  jsonrpc: Symbol.for("opencode-a2a.jsonrpc"),
  line: Symbol.for("opencode-a2a.line"),
  operation: Symbol.for("opencode-a2a.operation"),
  streaming: Symbol.for("opencode-a2a.streaming"),
  extension: Symbol.for("opencode-a2a.extension"),
  conditional: Symbol.for("opencode-a2a.conditional"),
  scope: Symbol.for("opencode-a2a.scope"),
  retention: Symbol.for("opencode-a2a.retention"),
  a2aError: Symbol.for("opencode-a2a.a2aError"),
  raises: Symbol.for("opencode-a2a.raises"),
  notImplementedUntil: Symbol.for("opencode-a2a.notImplementedUntil"),
  httpKind: Symbol.for("opencode-a2a.httpKind"),
  public: Symbol.for("opencode-a2a.public"),
  accessControl: Symbol.for("opencode-a2a.accessControl"),
});

function record(key) {
  return (context, target, value) => {
    context.program.stateMap(key).set(target, value);
  };
}

export const $jsonrpc = record(StateKeys.jsonrpc);
export const $line = record(StateKeys.line);
export const $operation = record(StateKeys.operation);
export const $extension = record(StateKeys.extension);
export const $conditional = record(StateKeys.conditional);
export const $scope = record(StateKeys.scope);
export const $retention = record(StateKeys.retention);
export const $a2aError = record(StateKeys.a2aError);
export const $notImplementedUntil = record(StateKeys.notImplementedUntil);
export const $httpKind = record(StateKeys.httpKind);
export const $accessControl = record(StateKeys.accessControl);

export function $streaming(context, target) {
  context.program.stateMap(StateKeys.streaming).set(target, true);
}

export function $public(context, target) {
  context.program.stateMap(StateKeys.public).set(target, true);
}

export function $raises(context, target, ...errors) {
  const existing = context.program.stateMap(StateKeys.raises).get(target) ?? [];
  context.program.stateMap(StateKeys.raises).set(target, [...existing, ...errors]);
}
