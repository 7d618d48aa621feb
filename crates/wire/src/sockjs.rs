//! SockJS framing and JSON escaping (to be written).
