package switchboard.peers.pekko;

import com.typesafe.config.ConfigFactory;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.AttributeKeys;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.model.ws.Message;
import org.apache.pekko.http.javadsl.model.ws.TextMessage;
import org.apache.pekko.http.javadsl.model.ws.WebSocketUpgrade;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import switchboard.peers.apps.App;
import switchboard.peers.apps.Apps;
import switchboard.peers.apps.Conn;
import switchboard.peers.apps.Peer;

/**
 * The Pekko HTTP peer (Apache Pekko, the open-source continuation of Akka):
 * the low-level server API, each app's WebSocket at /APP/websocket as a Pekko
 * Streams flow, plus GET /count/xhr and /healthz.
 * Usage: java -jar peer-pekko.jar PORT.
 */
public final class PekkoPeer {
    // Per-client outbound buffer, in messages; a client that stops reading is
    // dropped from rather than let the queue grow without bound.
    private static final int OUTBOUND = 16_384;

    public static void main(String[] args) {
        int port = Peer.start(args);
        ActorSystem system = ActorSystem.create("peer", ConfigFactory.parseString(String.join("\n",
                "pekko.loglevel = WARNING",
                // SIGTERM exits at once instead of running the coordinated shutdown.
                "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off",
                // WebSocket clients of the bench may sit idle between phases (default 60 s).
                "pekko.http.server.idle-timeout = infinite",
                "pekko.http.server.websocket.periodic-keep-alive-max-idle = infinite"))
                .withFallback(ConfigFactory.load()));
        Materializer mat = Materializer.createMaterializer(system);
        Map<String, App> apps = Apps.make();
        Http.get(system).newServerAt("127.0.0.1", port)
                .bindSync(req -> handle(apps, mat, req))
                .whenComplete((binding, e) -> {
                    if (e != null) {
                        System.err.println("pekko: FAILED: " + e);
                        System.exit(1);
                    }
                    Peer.ready(binding.localAddress().getPort());
                });
    }

    private static HttpResponse handle(Map<String, App> apps, Materializer mat, HttpRequest req) {
        String path = req.getUri().path();
        Optional<WebSocketUpgrade> upgrade = req.getAttribute(AttributeKeys.webSocketUpgrade);
        if (upgrade.isPresent()) {
            String name = Peer.appOf(path, apps);
            if (name == null) return HttpResponse.create().withStatus(404);
            return upgrade.get().handleMessagesWith(flow(apps.get(name), mat));
        }
        req.discardEntityBytes(mat);
        switch (path) {
            case "/healthz":
                return HttpResponse.create().withEntity(ContentTypes.TEXT_PLAIN_UTF8, "ok");
            case "/count/xhr": {
                Apps.Answer a = Apps.countXhr(req.getUri().query().get("count").orElse(null));
                return HttpResponse.create()
                        .withStatus(a.status())
                        .addHeader(RawHeader.create("Cache-Control", "no-store"))
                        .withEntity(ContentTypes.APPLICATION_JSON, a.body());
            }
            default:
                return HttpResponse.create().withStatus(404).withEntity("not found");
        }
    }

    /** One client: incoming text messages go to the app; the app's sends go to a bounded queue. */
    private static Flow<Message, Message, NotUsed> flow(App app, Materializer mat) {
        Pair<BoundedSourceQueue<Message>, Source<Message, NotUsed>> out =
                Source.<Message>queue(OUTBOUND).preMaterialize(mat);
        BoundedSourceQueue<Message> queue = out.first();
        Conn conn = text -> queue.offer(TextMessage.create(text));
        app.onOpen(conn);
        Sink<Message, NotUsed> in = Flow.<Message>create()
                .mapAsync(1, m -> {
                    if (m.isText()) return m.asTextMessage().toStrict(3_000, mat).thenApply(t -> t.getStrictText());
                    m.asBinaryMessage().getStreamedData().runWith(Sink.ignore(), mat);
                    return CompletableFuture.completedFuture((String) null);
                })
                .filter(t -> t != null)
                .watchTermination((notUsed, done) -> {
                    done.whenComplete((d, e) -> {
                        app.onClose(conn);
                        queue.complete();
                    });
                    return notUsed;
                })
                .to(Sink.foreach(text -> app.onMessage(conn, text)));
        return Flow.fromSinkAndSourceCoupled(in, out.second());
    }
}
