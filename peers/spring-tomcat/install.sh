#!/usr/bin/env bash
# Installs the spring-tomcat peer: Spring Boot 3 (spring-boot-starter-websocket) on Tomcat, built with Maven from Maven Central
# (peers/java, module spring-tomcat) into peers/spring-tomcat/peer-spring-tomcat.jar. Idempotent. Prints one line
# with the versions.
set -euo pipefail
PEER=spring-tomcat
. "$(dirname "$0")/../lib/common.sh"
maven_build spring-tomcat peer-spring-tomcat.jar
echo "$PEER: installed spring-boot $(jar_version "$PEERS_DIR/$PEER/peer-spring-tomcat.jar" org.springframework.boot spring-boot) with spring-websocket $(jar_version "$PEERS_DIR/$PEER/peer-spring-tomcat.jar" org.springframework spring-websocket) on tomcat-embed-core $(jar_version "$PEERS_DIR/$PEER/peer-spring-tomcat.jar" org.apache.tomcat.embed tomcat-embed-core) on $(java_runtime)"
