#!/usr/bin/env bash
# Installs the pekko peer: Apache Pekko HTTP (Java DSL), built with Maven from Maven Central
# (peers/java, module pekko) into peers/pekko/peer-pekko.jar. Idempotent. Prints one line
# with the versions.
set -euo pipefail
PEER=pekko
. "$(dirname "$0")/../lib/common.sh"
maven_build pekko peer-pekko.jar
# Pekko's jars carry no pom.properties; their versions are in version.conf
# (pekko) and pekko-http-version.conf (pekko.http).
pekko_version() {
  python3 -c 'import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(re.search(sys.argv[3] + r" = \"(.*)\"", z.read(sys.argv[2]).decode()).group(1))' "$PEERS_DIR/$PEER/peer-pekko.jar" "$@"
}
echo "$PEER: installed pekko-http $(pekko_version pekko-http-version.conf pekko.http.version) with pekko-stream $(pekko_version version.conf pekko.version) on $(java_runtime)"
