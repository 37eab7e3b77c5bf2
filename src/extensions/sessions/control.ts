// The control methods of the sessions family: prompt_async, command, shell, fork, share, unshare, summarize, revert
// and unrevert. Each runs under the owner guard (access.ts `guarded`).
import type { SessionsHandlers } from "../../../generated/types/methods.js";
import * as sdk from "../../../generated/opencode/sdk.gen.js";
import type { Call } from "../../operations/index.js";
import { compact, invalid } from "../../protocol/codec/common.js";
import { isSession } from "../../upstream/client.js";
import { UpstreamError } from "../../upstream/errors.js";
import { isObject } from "../../util/object.js";
import type { SessionAccess } from "./access.js";
import { filePart, idParam, MESSAGE_ID, modelOf, PART_ID, promptFormat, promptPart, request, sessionIdOf } from "./input.js";
import { isUpstreamMessage, sessionSummary, str, type UpstreamMessage } from "./projection.js";

export function controlHandlers(access: SessionAccess) {
  return {
    "opencode.sessions.prompt_async": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const r = request(params);
      const parts = (Array.isArray(r.parts) ? r.parts : []).map((raw, i) => promptPart(raw, `request.parts.${i}`));
      const format = r.format === undefined ? undefined : promptFormat(r.format);
      const body = compact({
        parts,
        messageID: str(r.messageID),
        model: modelOf(r.model, "request.model"),
        agent: str(r.agent),
        noReply: typeof r.noReply === "boolean" ? r.noReply : undefined,
        tools: isObject(r.tools) ? (r.tools as Record<string, boolean>) : undefined,
        format,
        system: str(r.system),
        variant: str(r.variant),
      });
      return access.guarded(c.principal, sessionId, routing, async () => {
        let status: number | undefined;
        await access.call(
          "sessionPromptAsync",
          async (x) => {
            const result = await sdk.sessionPromptAsync({ ...x, path: { sessionID: sessionId }, body });
            status = result.response?.status;
            return result;
          },
          { ...routing, sessionId },
        );
        if (status !== 204) {
          throw new UpstreamError({ kind: "payload", operation: "sessionPromptAsync", detail: `expected 204, got ${status}`, ...(status === undefined ? {} : { status }) }).toA2AError();
        }
        return { ok: true as const, session_id: sessionId };
      });
    },

    "opencode.sessions.command": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const r = request(params);
      const name = (str(r.command) ?? "").replace(/^\//, "");
      if (name === "") throw invalid("request.command", "must name a command");
      const model = modelOf(r.model, "request.model");
      const files = Array.isArray(r.parts) ? r.parts.map((p, i) => filePart(p, `request.parts.${i}`)) : undefined;
      const body = compact({
        command: name,
        arguments: str(r.arguments) ?? "",
        messageID: str(r.messageID),
        agent: str(r.agent),
        model: model === undefined ? undefined : `${model.providerID}/${model.modelID}`,
        variant: str(r.variant),
        parts: files,
      });
      return access.guarded(c.principal, sessionId, routing, async () => {
        try {
          const result = await access.call("sessionCommand", (x) => sdk.sessionCommand({ ...x, path: { sessionID: sessionId }, body }), {
            ...routing,
            sessionId,
            validate: isUpstreamMessage,
          });
          return { item: access.message(c, sessionId, result as unknown as UpstreamMessage) };
        } catch (error) {
          throw (await access.unknownName(error, "command", name, routing)) ?? error;
        }
      });
    },

    "opencode.sessions.shell": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const r = request(params);
      const agent = str(r.agent) ?? "";
      const command = str(r.command) ?? "";
      if (agent === "") throw invalid("request.agent", "is required");
      if (command === "") throw invalid("request.command", "is required");
      const body = compact({ agent, command, model: modelOf(r.model, "request.model") });
      return access.guarded(c.principal, sessionId, routing, async () => {
        try {
          const result = await access.call("sessionShell", (x) => sdk.sessionShell({ ...x, path: { sessionID: sessionId }, body }), {
            ...routing,
            sessionId,
            validate: isUpstreamMessage,
          });
          return { item: access.message(c, sessionId, result as unknown as UpstreamMessage) };
        } catch (error) {
          throw (await access.unknownName(error, "agent", agent, routing)) ?? error;
        }
      });
    },

    "opencode.sessions.fork": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const messageID = idParam(request(params).messageID, "request.messageID", MESSAGE_ID, "message");
      return access.guarded(c.principal, sessionId, routing, async () => {
        const fork = await access.call(
          "sessionFork",
          (x) => sdk.sessionFork({ ...x, path: { sessionID: sessionId }, body: messageID === undefined ? {} : { messageID } }),
          { ...routing, sessionId, validate: isSession },
        );
        // The gateway created the fork for the caller: the caller owns it.
        await access.owners.setOwner(fork.id, c.principal.id);
        return { item: sessionSummary(fork) };
      });
    },

    "opencode.sessions.share": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      return access.guarded(c.principal, sessionId, routing, async () => {
        const s = await access.call("sessionShare", (x) => sdk.sessionShare({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.unshare": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      return access.guarded(c.principal, sessionId, routing, async () => {
        const s = await access.call("sessionUnshare", (x) => sdk.sessionUnshare({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.summarize": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const r = request(params);
      const providerID = str(r.providerID);
      const modelID = str(r.modelID);
      if ((providerID === undefined) !== (modelID === undefined))
        throw invalid(providerID === undefined ? "request.providerID" : "request.modelID", "is required together with the other half of the model");
      const auto = typeof r.auto === "boolean" ? r.auto : undefined;
      return access.guarded(c.principal, sessionId, routing, async (known) => {
        const model = providerID !== undefined && modelID !== undefined ? { providerID, modelID } : await access.currentModel(sessionId, routing, known);
        await access.call(
          "sessionSummarize",
          (x) => sdk.sessionSummarize({ ...x, path: { sessionID: sessionId }, body: compact({ ...model, auto }) }),
          { ...routing, sessionId, validate: (d) => d === true },
        );
        return { ok: true as const, session_id: sessionId };
      });
    },

    "opencode.sessions.revert": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      const r = request(params);
      const messageID = idParam(r.messageID, "request.messageID", MESSAGE_ID, "message");
      if (messageID === undefined) throw invalid("request.messageID", "is required");
      const partID = idParam(r.partID, "request.partID", PART_ID, "part");
      return access.guarded(c.principal, sessionId, routing, async () => {
        const s = await access.call(
          "sessionRevert",
          (x) => sdk.sessionRevert({ ...x, path: { sessionID: sessionId }, body: compact({ messageID, partID }) }),
          { ...routing, sessionId, validate: isSession },
        );
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.unrevert": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = access.routingOf(params, c);
      return access.guarded(c.principal, sessionId, routing, async () => {
        const s = await access.call("sessionUnrevert", (x) => sdk.sessionUnrevert({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },
  } satisfies Partial<SessionsHandlers<Call>>;
}
