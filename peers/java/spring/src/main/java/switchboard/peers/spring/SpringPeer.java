package switchboard.peers.spring;

import java.io.IOException;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.context.WebServerInitializedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.socket.CloseStatus;
import org.springframework.web.socket.TextMessage;
import org.springframework.web.socket.WebSocketSession;
import org.springframework.web.socket.config.annotation.EnableWebSocket;
import org.springframework.web.socket.config.annotation.WebSocketConfigurer;
import org.springframework.web.socket.config.annotation.WebSocketHandlerRegistry;
import org.springframework.web.socket.handler.ConcurrentWebSocketSessionDecorator;
import org.springframework.web.socket.handler.TextWebSocketHandler;
import switchboard.peers.apps.App;
import switchboard.peers.apps.Apps;
import switchboard.peers.apps.Conn;
import switchboard.peers.apps.Peer;

/**
 * The Spring Boot peers (spring-boot-starter-websocket, the servlet container
 * chosen by the module that packages it: Tomcat or Jetty). Each app is a
 * WebSocketHandler at /APP/websocket; /healthz and /count/xhr are a
 * RestController. Usage: java -jar peer-spring-tomcat.jar PORT.
 */
@SpringBootApplication
@EnableWebSocket
@RestController
public class SpringPeer implements WebSocketConfigurer {
    private final Map<String, App> apps = Apps.make();

    public static void main(String[] args) {
        int port = Peer.start(args);
        SpringApplication app = new SpringApplication(SpringPeer.class);
        app.setDefaultProperties(Map.of(
                "server.address", "127.0.0.1",
                "server.port", Integer.toString(port),
                // SIGTERM exits at once (Spring Boot 3.4's default is graceful).
                "server.shutdown", "immediate",
                "spring.main.banner-mode", "off",
                "logging.level.root", "WARN"));
        app.run();
    }

    @EventListener
    public void onReady(WebServerInitializedEvent event) {
        Peer.ready(event.getWebServer().getPort());
    }

    @Override
    public void registerWebSocketHandlers(WebSocketHandlerRegistry registry) {
        for (Map.Entry<String, App> e : apps.entrySet()) {
            registry.addHandler(new AppHandler(e.getValue()), "/" + e.getKey() + "/websocket").setAllowedOrigins("*");
        }
    }

    @GetMapping("/healthz")
    public ResponseEntity<String> healthz() {
        return ResponseEntity.ok().contentType(MediaType.TEXT_PLAIN).body("ok");
    }

    @GetMapping("/count/xhr")
    public ResponseEntity<String> countXhr(@RequestParam(name = "count", required = false) String count) {
        Apps.Answer a = Apps.countXhr(count);
        return ResponseEntity.status(a.status())
                .contentType(MediaType.APPLICATION_JSON)
                .header("Cache-Control", "no-store")
                .body(a.body());
    }

    /** Adapts one app to Spring's WebSocket sessions. */
    static final class AppHandler extends TextWebSocketHandler {
        private static final String CONN = "peer.conn";
        private final App app;

        AppHandler(App app) { this.app = app; }

        @Override
        public void afterConnectionEstablished(WebSocketSession session) {
            // Switchboard's --max-message-size default; a bigger message closes 1009.
            session.setTextMessageSizeLimit(64 * 1024);
            // A session's sendMessage is not thread-safe, and a room publishes from
            // whichever thread received the message: Spring's decorator serialises
            // the sends and buffers (4 MiB, 10 s) while another thread is writing.
            WebSocketSession out = new ConcurrentWebSocketSessionDecorator(session, 10_000, 4 << 20);
            Conn conn = text -> {
                try {
                    out.sendMessage(new TextMessage(text));
                } catch (IOException | RuntimeException e) {
                    // the session is closing or over its buffer limit; close follows
                }
            };
            session.getAttributes().put(CONN, conn);
            app.onOpen(conn);
        }

        @Override
        protected void handleTextMessage(WebSocketSession session, TextMessage message) {
            app.onMessage((Conn) session.getAttributes().get(CONN), message.getPayload());
        }

        @Override
        public void afterConnectionClosed(WebSocketSession session, CloseStatus status) {
            Conn conn = (Conn) session.getAttributes().get(CONN);
            if (conn != null) app.onClose(conn);
        }
    }
}
