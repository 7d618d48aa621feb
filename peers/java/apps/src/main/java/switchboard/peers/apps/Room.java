package switchboard.peers.apps;

import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The members of one broadcast or chat room. A peer may pass its own (the
 * Vert.x EventBus peer publishes through the bus); {@link #local()} writes to
 * each member in turn, as the frameworks' own examples do.
 */
public interface Room {
    void add(Conn conn);

    void remove(Conn conn);

    void publish(String text);

    static Room local() {
        return new Room() {
            private final Set<Conn> conns = new LinkedHashSet<>();

            @Override public void add(Conn conn) { conns.add(conn); }

            @Override public void remove(Conn conn) { conns.remove(conn); }

            @Override public void publish(String text) {
                for (Conn c : conns) c.send(text);
            }
        };
    }
}
