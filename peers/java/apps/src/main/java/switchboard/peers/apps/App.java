package switchboard.peers.apps;

/** One of Switchboard's apps, driven by a peer's transport. */
public interface App {
    default void onOpen(Conn conn) {}

    void onMessage(Conn conn, String text);

    default void onClose(Conn conn) {}
}
