#!/usr/bin/env bash
# Installs the vertx peer: Vert.x 4 core, apps writing to each member, built with Maven from Maven Central
# (peers/java, module vertx) into peers/vertx/peer-vertx.jar. Idempotent. Prints one line
# with the versions.
set -euo pipefail
PEER=vertx
. "$(dirname "$0")/../lib/common.sh"
maven_build vertx peer-vertx.jar
echo "$PEER: installed vertx-core $(jar_version "$PEERS_DIR/$PEER/peer-vertx.jar" io.vertx vertx-core) (rooms without the EventBus) on $(java_runtime)"
