package switchboard.peers.apps;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Switchboard's four apps (echo, broadcast, chat, count) with its exact message
 * formats (docs/apps.md, "Apps and message formats"), for the Java peers. The same
 * logic as peers/lib/apps.js. Frameworks call from several threads (Tomcat and
 * Jetty workers, Pekko's dispatcher), so broadcast and chat hold one lock while
 * they publish: every member sees a room's messages in one order, the order of
 * arrival, as in Switchboard.
 */
public final class Apps {
    public static final List<String> NAMES = List.of("echo", "broadcast", "chat", "count");
    static final int MAX_NAME_LEN = 64;

    private Apps() {}

    /** One instance of each app; makeRoom(key) builds a room ("broadcast", "chat:NAME"). */
    public static Map<String, App> make(Function<String, Room> makeRoom) {
        Map<String, App> apps = new LinkedHashMap<>();
        apps.put("echo", (conn, text) -> conn.send(text));
        apps.put("broadcast", new Broadcast(makeRoom.apply("broadcast")));
        apps.put("chat", new Chat(makeRoom));
        apps.put("count", (conn, text) -> conn.send(countMessage(text)));
        return apps;
    }

    public static Map<String, App> make() {
        return make(key -> Room.local());
    }

    /** An HTTP answer: status and JSON body. */
    public record Answer(int status, String body) {}

    /** GET /count/xhr?count=RAW (raw null when absent). */
    public static Answer countXhr(String raw) {
        if (raw == null) return new Answer(400, Json.error("malformed message: expected ?count=N"));
        if (!Pattern.matches("[+-]?\\d+", raw)) {
            return new Answer(400, Json.error("malformed message: count " + Json.quote(raw) + " is not an integer"));
        }
        return countAnswer(new BigInteger(raw));
    }

    static String countMessage(String text) {
        JsonNode v = Json.strictObject(text, "count");
        JsonNode n = v == null ? null : v.get("count");
        BigInteger count = null;
        if (n != null && n.isIntegralNumber()) count = n.bigIntegerValue();
        else if (n != null && n.isFloatingPointNumber() && n.doubleValue() == Math.rint(n.doubleValue())
                && !Double.isInfinite(n.doubleValue())) count = n.decimalValue().toBigInteger();
        if (count == null) return Json.error("malformed message: expected {\"count\":N}");
        return countAnswer(count).body();
    }

    // Counts are i64 in Switchboard: N-1 must fit.
    private static Answer countAnswer(BigInteger n) {
        BigInteger m = n.subtract(BigInteger.ONE);
        if (m.bitLength() >= 64 || n.bitLength() >= 64) return new Answer(400, Json.error("count out of range"));
        return new Answer(200, "{\"count\":" + m + "}");
    }

    static final class Broadcast implements App {
        private final Room room;

        Broadcast(Room room) { this.room = room; }

        @Override public synchronized void onOpen(Conn conn) { room.add(conn); }

        @Override public synchronized void onMessage(Conn conn, String text) { room.publish(text); }

        @Override public synchronized void onClose(Conn conn) { room.remove(conn); }
    }

    static final class Chat implements App {
        private record Member(String name, String room) {}

        private static final class Members {
            final Room room;
            final Map<String, Conn> names = new LinkedHashMap<>();

            Members(Room room) { this.room = room; }
        }

        private final Function<String, Room> makeRoom;
        private final Map<String, Members> rooms = new HashMap<>();
        private final Map<Conn, Member> joined = new HashMap<>();

        Chat(Function<String, Room> makeRoom) { this.makeRoom = makeRoom; }

        @Override public synchronized void onMessage(Conn conn, String text) {
            Member me = joined.get(conn);
            if (me == null) {
                join(conn, text);
                return;
            }
            JsonNode v = Json.strictObject(text, "message");
            String message = v == null ? null : Json.string(v, "message");
            if (message == null) {
                conn.send(Json.error("malformed message: expected {\"message\":\"...\"}"));
                return;
            }
            StringBuilder b = new StringBuilder(48 + message.length());
            b.append("{\"name\":");
            Json.quote(b, me.name);
            b.append(",\"room\":");
            Json.quote(b, me.room);
            b.append(",\"message\":");
            Json.quote(b, message);
            b.append('}');
            rooms.get(me.room).room.publish(b.toString());
        }

        private void join(Conn conn, String text) {
            JsonNode v = Json.strictObject(text, "name", "room");
            String name = v == null ? null : Json.string(v, "name");
            String room = v == null ? null : Json.string(v, "room");
            if (name == null || room == null) {
                conn.send(Json.error("malformed message: expected {\"name\":\"...\",\"room\":\"...\"}"));
                return;
            }
            for (String[] f : new String[][] {{"name", name}, {"room", room}}) {
                int len = f[1].getBytes(StandardCharsets.UTF_8).length;
                if (len < 1 || len > MAX_NAME_LEN) {
                    conn.send(Json.error("invalid " + f[0] + ": must be 1 to " + MAX_NAME_LEN + " bytes"));
                    return;
                }
            }
            Members r = rooms.get(room);
            if (r != null && r.names.containsKey(name)) {
                conn.send(Json.error("name " + Json.quote(name) + " is already taken in room " + Json.quote(room)));
                return;
            }
            if (r == null) {
                r = new Members(makeRoom.apply("chat:" + room));
                rooms.put(room, r);
            }
            r.names.put(name, conn);
            r.room.add(conn);
            joined.put(conn, new Member(name, room));
            StringBuilder b = new StringBuilder("{\"event\":\"members\",\"room\":");
            Json.quote(b, room);
            b.append(",\"members\":[");
            boolean first = true;
            for (String n : r.names.keySet()) {
                if (!first) b.append(',');
                first = false;
                Json.quote(b, n);
            }
            b.append("]}");
            conn.send(b.toString());
            r.room.publish(event("join", name, room));
        }

        @Override public synchronized void onClose(Conn conn) {
            Member me = joined.remove(conn);
            if (me == null) return;
            Members r = rooms.get(me.room);
            r.names.remove(me.name);
            r.room.remove(conn);
            if (r.names.isEmpty()) {
                rooms.remove(me.room);
                return;
            }
            r.room.publish(event("leave", me.name, me.room));
        }

        private static String event(String event, String name, String room) {
            return "{\"event\":\"" + event + "\",\"name\":" + Json.quote(name) + ",\"room\":" + Json.quote(room) + "}";
        }
    }
}
