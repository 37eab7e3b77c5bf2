// The audit log: the recorder the transports feed, the subject extractor, and GET /admin/audit.
export { AuditRecorder, auditSubject, AUDIT_SUBJECT_MAX_CHARS, type AuditRecordInput, type AuditRecorderOptions, type AuditSubject } from "./recorder.js";
export { registerAuditRoutes, parseAuditQuery, AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT, type AuditQuery, type AuditRouteDeps } from "./routes.js";
