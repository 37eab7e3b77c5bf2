// The identity of a file's current version for reload checks (the credentials file, the governance policy file):
// its size, mtime and inode, or "missing". A changed stamp means the file was written or replaced.
import fs from "node:fs";

export function fileStamp(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    return "missing";
  }
}
