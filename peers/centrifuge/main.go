// The centrifuge peer: a github.com/centrifugal/centrifuge Node whose rooms
// live in Redis (RedisBroker for PUB/SUB, RedisPresenceManager for
// presence), so several of these processes pointed at one Redis form one
// cluster. Clients speak Centrifugo's client protocol (JSON) over WebSocket at
// /connection/websocket; GET /healthz answers ok.
//
// Usage: centrifuge-peer [-redis HOST:PORT] PORT
//
// Every connection is accepted anonymously; a client may subscribe to any
// channel and publish to any channel (the data goes out as sent). Presence is
// kept for every subscription; join/leave pushes and history are off.
//
// Ready is the one stdout line 'listening on http://127.0.0.1:PORT/', printed
// once the node is running on Redis and the socket is bound (PORT 0: a free
// port, named in that line). Logs go to stderr. SIGTERM and SIGINT end the
// process at once (Go's default), as every peer does.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/centrifugal/centrifuge"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("centrifuge: ")
	redisAddr := flag.String("redis", envOr("REDIS_ADDR", "127.0.0.1:6379"), "Redis address, HOST:PORT (default $REDIS_ADDR)")
	prefix := flag.String("prefix", envOr("CENTRIFUGE_PREFIX", "switchboard-peer"), "prefix of every Redis key and PUB/SUB channel; nodes of one cluster share it")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [-redis HOST:PORT] [-prefix P] PORT   (serves on 127.0.0.1:PORT)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 1 && flag.Arg(0) == "freeport" {
		// start.sh's helper: a free loopback port for its own redis-server.
		fmt.Println(freePort())
		return
	}
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	port, err := strconv.Atoi(flag.Arg(0))
	if err != nil || port < 0 || port > 65535 {
		flag.Usage()
		os.Exit(2)
	}

	node, err := newNode(*redisAddr, *prefix, port)
	if err != nil {
		log.Fatalf("FAILED: %v", err)
	}

	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		// Any origin, like the other peers; 64 KiB per incoming message
		// (centrifuge's default, and Switchboard's).
		CheckOrigin:      func(*http.Request) bool { return true },
		MessageSizeLimit: 64 << 10,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		log.Fatalf("FAILED: %v", err)
	}
	fmt.Printf("listening on http://127.0.0.1:%d/\n", ln.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// newNode builds and runs the node on Redis, with the event handlers that
// make every client anonymous and free to subscribe and publish anywhere.
func newNode(redisAddr, prefix string, port int) (*centrifuge.Node, error) {
	node, err := centrifuge.New(centrifuge.Config{
		Name:     fmt.Sprintf("switchboard-peer-%d-%d", os.Getpid(), port),
		LogLevel: centrifuge.LogLevelWarn,
		LogHandler: func(e centrifuge.LogEntry) {
			log.Printf("%s %v", e.Message, e.Fields)
		},
	})
	if err != nil {
		return nil, err
	}

	shard, err := centrifuge.NewRedisShard(node, centrifuge.RedisShardConfig{Address: redisAddr})
	if err != nil {
		return nil, fmt.Errorf("redis shard %s: %w", redisAddr, err)
	}
	shards := []*centrifuge.RedisShard{shard}
	broker, err := centrifuge.NewRedisBroker(node, centrifuge.RedisBrokerConfig{Prefix: prefix, Shards: shards})
	if err != nil {
		return nil, fmt.Errorf("redis broker: %w", err)
	}
	node.SetBroker(broker)
	presence, err := centrifuge.NewRedisPresenceManager(node, centrifuge.RedisPresenceManagerConfig{Prefix: prefix, Shards: shards})
	if err != nil {
		return nil, fmt.Errorf("redis presence manager: %w", err)
	}
	node.SetPresenceManager(presence)

	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		// Anonymous: an empty user id.
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{}}, nil
	})
	node.OnConnect(func(client *centrifuge.Client) {
		client.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{Options: centrifuge.SubscribeOptions{EmitPresence: true}}, nil)
		})
		client.OnPublish(func(_ centrifuge.PublishEvent, cb centrifuge.PublishCallback) {
			// The data as sent, no history, no client info in the publication.
			cb(centrifuge.PublishReply{}, nil)
		})
		client.OnPresence(func(_ centrifuge.PresenceEvent, cb centrifuge.PresenceCallback) {
			cb(centrifuge.PresenceReply{}, nil)
		})
		client.OnPresenceStats(func(_ centrifuge.PresenceStatsEvent, cb centrifuge.PresenceStatsCallback) {
			cb(centrifuge.PresenceStatsReply{}, nil)
		})
	})

	if err := node.Run(); err != nil {
		return nil, fmt.Errorf("node run on redis %s: %w", redisAddr, err)
	}
	return node, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("FAILED: no free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
