package switchboard.peers.vertx;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.ServerWebSocket;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import switchboard.peers.apps.App;
import switchboard.peers.apps.Apps;
import switchboard.peers.apps.Conn;
import switchboard.peers.apps.Peer;
import switchboard.peers.apps.Room;

/**
 * The Vert.x peers: one Vert.x core HTTP server on one event loop, each app
 * at /APP/websocket (native WebSocket), GET /count/xhr and /healthz.
 *
 * <p>Usage: java -jar peer-vertx.jar [--eventbus] PORT. With --eventbus a room
 * is an EventBus address: every member registers a consumer on it and a
 * message is published through the bus, as the chat study's Vert.x app did;
 * without it the app writes to each member's socket itself.
 */
public final class VertxPeer {
    public static void main(String[] args) {
        int port = Peer.start(args);
        boolean useBus = Peer.flag(args, "--eventbus");
        Vertx vertx = Vertx.vertx();
        EventBus bus = vertx.eventBus();
        Function<String, Room> makeRoom = useBus ? key -> new BusRoom(bus, "room." + key) : key -> Room.local();
        Map<String, App> apps = Apps.make(makeRoom);

        HttpServerOptions options = new HttpServerOptions()
                .setHost("127.0.0.1")
                .setPort(port)
                // Switchboard's --max-message-size default (Vert.x's is 100 KiB / 64 KiB frames).
                .setMaxWebSocketMessageSize(64 * 1024)
                .setMaxWebSocketFrameSize(64 * 1024);
        vertx.createHttpServer(options)
                .webSocketHandler(ws -> serveWebSocket(apps, ws))
                .requestHandler(VertxPeer::serveHttp)
                .listen()
                .onSuccess(server -> Peer.ready(server.actualPort()))
                .onFailure(e -> {
                    System.err.println("vertx: FAILED: " + e);
                    System.exit(1);
                });
    }

    private static void serveWebSocket(Map<String, App> apps, ServerWebSocket ws) {
        String name = Peer.appOf(ws.path(), apps);
        if (name == null) {
            ws.reject(404);
            return;
        }
        App app = apps.get(name);
        Conn conn = ws::writeTextMessage;
        app.onOpen(conn);
        ws.textMessageHandler(text -> app.onMessage(conn, text));
        ws.binaryMessageHandler(b -> ws.close((short) 1003, "binary frames are not accepted"));
        ws.exceptionHandler(e -> {}); // a bad frame closes the socket; closeHandler follows
        ws.closeHandler(v -> app.onClose(conn));
    }

    private static void serveHttp(HttpServerRequest req) {
        switch (req.path()) {
            case "/healthz" -> req.response().putHeader("Content-Type", "text/plain").end("ok");
            case "/count/xhr" -> {
                Apps.Answer a = Apps.countXhr(req.getParam("count"));
                req.response()
                        .setStatusCode(a.status())
                        .putHeader("Content-Type", "application/json")
                        .putHeader("Cache-Control", "no-store")
                        .end(a.body());
            }
            default -> req.response().setStatusCode(404).putHeader("Content-Type", "text/plain").end("not found");
        }
    }

    /** A room as an EventBus address: join registers a consumer, publish goes through the bus. */
    private static final class BusRoom implements Room {
        private final EventBus bus;
        private final String address;
        private final Map<Conn, MessageConsumer<String>> consumers = new HashMap<>();

        BusRoom(EventBus bus, String address) {
            this.bus = bus;
            this.address = address;
        }

        @Override public void add(Conn conn) {
            consumers.put(conn, bus.<String>localConsumer(address, m -> conn.send(m.body())));
        }

        @Override public void remove(Conn conn) {
            MessageConsumer<String> c = consumers.remove(conn);
            if (c != null) c.unregister();
        }

        @Override public void publish(String text) {
            bus.publish(address, text);
        }
    }
}
