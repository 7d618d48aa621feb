#!/usr/bin/env bash
# Installs the vertx-eventbus peer: Vert.x 4 core, rooms published through the EventBus, built with Maven from Maven Central
# (peers/java, module vertx) into peers/vertx-eventbus/peer-vertx.jar. Idempotent. Prints one line
# with the versions.
set -euo pipefail
PEER=vertx-eventbus
. "$(dirname "$0")/../lib/common.sh"
maven_build vertx peer-vertx.jar
echo "$PEER: installed vertx-core $(jar_version "$PEERS_DIR/$PEER/peer-vertx.jar" io.vertx vertx-core) (rooms through the EventBus) on $(java_runtime)"
