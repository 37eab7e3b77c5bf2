/**
 * Permission and question requests: the pending ones of a directory, and their replies (`permission.respond` is
 * the older per-session route for the same answer).
 */
import { badRequest, isObject } from "../common.js";
import type { Router } from "../openapi.js";
import type { Parts } from "./index.js";

export function interactionRoutes(router: Router, { interactions }: Parts): void {
  router.on("permission.list", ({ directory }) => interactions.permissionsOf(directory));

  router.on("permission.reply", ({ param, body }) => {
    const reply = isObject(body) ? body.reply : undefined;
    if (reply !== "once" && reply !== "always" && reply !== "reject") throw badRequest('Expected "once" | "always" | "reject"\n  at ["reply"]');
    const message = isObject(body) && typeof body.message === "string" ? body.message : undefined;
    return interactions.replyPermission(param("requestID"), { reply, ...(message === undefined ? {} : { message }) });
  });

  router.on("permission.respond", ({ param, body }) => {
    const response = isObject(body) ? body.response : undefined;
    if (response !== "once" && response !== "always" && response !== "reject") throw badRequest('Expected "once" | "always" | "reject"\n  at ["response"]');
    return interactions.replyPermission(param("permissionID"), { reply: response });
  });

  router.on("question.list", ({ directory }) => interactions.questionsOf(directory));

  router.on("question.reply", ({ param, body }) => {
    const answers = isObject(body) ? body.answers : undefined;
    if (!Array.isArray(answers) || !answers.every((a) => Array.isArray(a) && a.every((s) => typeof s === "string"))) {
      throw badRequest('Missing key\n  at ["answers"]');
    }
    return interactions.answerQuestion(param("requestID"), { answers: answers as string[][] });
  });

  router.on("question.reject", ({ param }) => interactions.answerQuestion(param("requestID"), { rejected: true }));
}
