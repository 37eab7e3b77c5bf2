#!/bin/sh
# Installs Debian's headless Chromium for the browser test (test/browser/docs.test.ts) and prints its version.
# Needs root (CI containers run as root). The test looks for /usr/bin/chromium (or CHROME_PATH) and fails when it
# is missing while CI=true.
set -eu
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  echo "chromium.sh: run as root (apt-get install)" >&2
  exit 1
fi
apt-get update -q
apt-get install -y -q chromium
chromium --version
