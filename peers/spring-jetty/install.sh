#!/usr/bin/env bash
# Installs the spring-jetty peer: Spring Boot 3 (spring-boot-starter-websocket) on Jetty, built with Maven from Maven Central
# (peers/java, module spring-jetty) into peers/spring-jetty/peer-spring-jetty.jar. Idempotent. Prints one line
# with the versions.
set -euo pipefail
PEER=spring-jetty
. "$(dirname "$0")/../lib/common.sh"
maven_build spring-jetty peer-spring-jetty.jar
echo "$PEER: installed spring-boot $(jar_version "$PEERS_DIR/$PEER/peer-spring-jetty.jar" org.springframework.boot spring-boot) with spring-websocket $(jar_version "$PEERS_DIR/$PEER/peer-spring-jetty.jar" org.springframework spring-websocket) on jetty-server $(jar_version "$PEERS_DIR/$PEER/peer-spring-jetty.jar" org.eclipse.jetty jetty-server) on $(java_runtime)"
