package switchboard.peers.apps;

/** One client connection as the apps see it: something to send a text message to. */
@FunctionalInterface
public interface Conn {
    /** Sends one app message (one WebSocket text frame). Must not block for long. */
    void send(String text);
}
