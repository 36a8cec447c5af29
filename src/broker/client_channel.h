#pragma once

// client_channel: what a client actor needs from a network connection. net/ implements it over
// TCP (and later TLS and WebSocket); tests implement it in memory. Keeping the actor behind this
// small interface is what lets the MQTT behaviour be tested without sockets.
//
// Concurrency: every method may be called from any thread.

#include <cstddef>
#include <cstdint>
#include <string>

namespace starling::broker {

class client_channel {
  public:
    virtual ~client_channel() = default;

    // Queues bytes for writing. Never blocks. The caller checks writable() first for copies it
    // may skip; bytes are still accepted when not writable (up to the transport's hard cap).
    virtual void send(std::string bytes) = 0;
    // Flushes what is queued, then closes.
    virtual void close() = 0;
    virtual bool writable() const = 0;
    // Lets the connection read again after it paused because the actor's mailbox was full.
    virtual void resume_reading() = 0;
    // True while reading is paused because the actor's mailbox was full.
    virtual bool reading_paused() const = 0;
    // The actor's own flow control, independent of the mailbox: while held, the connection
    // reads nothing more from the socket (TCP backpressure on the client). A 3.1.1 publisher
    // with a full inbound window is held rather than disconnected (it has no Receive Maximum).
    virtual void hold_reading(bool held) = 0;
    virtual const std::string& remote_address() const = 0;
    virtual std::uint64_t id() const = 0;
    // True once the client sent DISCONNECT or closed its side: everything it will ever send
    // is already on its way to the actor (see client_actor::on_connect).
    virtual bool input_ended() const { return false; }
};

}  // namespace starling::broker
