package switchboard.peers.apps;

import java.io.PrintStream;

/**
 * The start.sh contract for a Java peer: the port is the last argument, the
 * only line on stdout is the ready line, everything else goes to stderr.
 */
public final class Peer {
    private static PrintStream stdout;

    private Peer() {}

    /**
     * Keeps stdout for the ready line and points System.out at stderr, so a
     * framework's banner or logger cannot write there. Call first in main.
     */
    public static int start(String[] args) {
        stdout = System.out;
        System.setOut(System.err);
        // The peer contract: SIGTERM exits at once. The frameworks' shutdown
        // hooks (Spring's context close, Pekko's coordinated shutdown) take
        // seconds on a busy machine and would delay the next server's start.
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), s -> Runtime.getRuntime().halt(143));
        String last = args.length == 0 ? "" : args[args.length - 1];
        try {
            int port = Integer.parseInt(last);
            if (port >= 0 && port <= 65535) return port;
        } catch (NumberFormatException e) {
            // fall through to the usage line
        }
        System.err.println("usage: java -jar PEER.jar [OPTIONS] PORT   (serves on 127.0.0.1:PORT)");
        System.exit(2);
        return -1;
    }

    public static boolean flag(String[] args, String flag) {
        for (int i = 0; i < args.length - 1; i++) if (args[i].equals(flag)) return true;
        return false;
    }

    /** The one line the caller waits for, once the socket is bound. */
    public static void ready(int port) {
        stdout.println("listening on http://127.0.0.1:" + port + "/");
        stdout.flush();
    }

    /** The app at /APP/websocket, or null. */
    public static String appOf(String path, java.util.Map<String, App> apps) {
        if (path == null || !path.startsWith("/") || !path.endsWith("/websocket")) return null;
        String name = path.substring(1, path.length() - "/websocket".length());
        return apps.containsKey(name) ? name : null;
    }
}
