//===- Store.cpp - the rendezvous key-value store over TCP -----------------===//
#include "runtime/dist/Store.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace lcc {
namespace dist {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxKey = 1 << 16;
constexpr uint64_t kMaxValue = uint64_t(1) << 30;
constexpr uint32_t kMaxKeys = 1 << 16;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

Clock::time_point deadlineAfter(double s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int msLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : left > 1 << 30 ? 1 << 30 : int(left);
}

void putU32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(char(v >> (8 * i)));
}
void putU64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(char(v >> (8 * i)));
}
uint64_t getLE(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}
void putKey(std::string &s, const std::string &key) {
  putU32(s, uint32_t(key.size()));
  s += key;
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// Writes everything; false on error (the peer went away).
bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Server
//===----------------------------------------------------------------------===//

class StoreServer {
public:
  static Status start(int port, std::unique_ptr<StoreServer> &out);
  ~StoreServer();
  int port() const { return port_; }

private:
  struct Client {
    int fd;
    std::string in;
  };
  enum class Parse { Done, Incomplete, Bad };

  void run();
  Parse handleOne(Client &client, size_t &consumed);

  int listenFd_ = -1, wakeRead_ = -1, wakeWrite_ = -1, port_ = 0;
  std::thread thread_;
  std::map<std::string, std::vector<char>> data_; // only the server thread touches it
};

Status StoreServer::start(int port, std::unique_ptr<StoreServer> &out) {
  auto fail = [&](const char *what) {
    int err = errno;
    std::string msg = "cannot serve the rendezvous store on port " + std::to_string(port) + ": ";
    if (err == EADDRINUSE)
      msg += "port in use (another job or a stale process holds MASTER_PORT)";
    else
      msg += std::string(what) + ": " + std::strerror(err);
    return Status::failure(msg);
  };
  std::unique_ptr<StoreServer> server(new StoreServer());
  // Dual-stack IPv6 socket on all interfaces, so MASTER_ADDR may be any of
  // this host's names or addresses (v4 or v6); plain IPv4 where v6 is off.
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6)
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return fail("socket");
  server->listenFd_ = fd;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(uint16_t(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(uint16_t(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  }
  if (rc != 0)
    return fail("bind");
  if (::listen(fd, SOMAXCONN) != 0)
    return fail("listen");
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len);
  server->port_ = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    return fail("pipe");
  server->wakeRead_ = pipeFds[0];
  server->wakeWrite_ = pipeFds[1];
  StoreServer *raw = server.get();
  server->thread_ = std::thread([raw] { raw->run(); });
  out = std::move(server);
  return {};
}

StoreServer::~StoreServer() {
  if (thread_.joinable()) {
    char c = 0;
    while (::write(wakeWrite_, &c, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (int fd : {listenFd_, wakeRead_, wakeWrite_})
    if (fd >= 0)
      ::close(fd);
}

void StoreServer::run() {
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  char buf[1 << 16];
  for (;;) {
    fds.clear();
    fds.push_back({wakeRead_, POLLIN, 0});
    fds.push_back({listenFd_, POLLIN, 0});
    for (const Client &c : clients)
      fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[0].revents)
      break; // the store is being destroyed
    std::vector<bool> drop(clients.size(), false);
    for (size_t i = 0; i < clients.size(); ++i) {
      if (!fds[i + 2].revents)
        continue;
      Client &c = clients[i];
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n <= 0) { // disconnected (a finished or crashed rank): forget it
        drop[i] = true;
        continue;
      }
      c.in.append(buf, size_t(n));
      for (;;) { // every complete request in the buffer
        size_t used = 0;
        Parse p = handleOne(c, used);
        if (p == Parse::Bad)
          drop[i] = true;
        if (p != Parse::Done)
          break;
        c.in.erase(0, used);
      }
    }
    for (size_t i = clients.size(); i-- > 0;)
      if (drop[i]) {
        ::close(clients[i].fd);
        clients.erase(clients.begin() + long(i));
      }
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        setNoDelay(fd);
        // A client that stops reading must not stall everyone else.
        timeval tv{10, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        clients.push_back({fd, {}});
      }
    }
  }
  for (Client &c : clients)
    ::close(c.fd);
}

StoreServer::Parse StoreServer::handleOne(Client &client, size_t &consumed) {
  const std::string &in = client.in;
  size_t pos = 0;
  auto have = [&](size_t n) { return in.size() - pos >= n; };
  auto readKey = [&](std::string &key) -> Parse {
    if (!have(4))
      return Parse::Incomplete;
    uint32_t len = uint32_t(getLE(in.data() + pos, 4));
    if (len > kMaxKey)
      return Parse::Bad;
    if (!have(4 + size_t(len)))
      return Parse::Incomplete;
    key.assign(in, pos + 4, len);
    pos += 4 + len;
    return Parse::Done;
  };
  if (!have(1))
    return Parse::Incomplete;
  char op = in[pos++];
  std::string key, reply;
  Parse p;
  switch (op) {
  case 'S': {
    if ((p = readKey(key)) != Parse::Done)
      return p;
    if (!have(8))
      return Parse::Incomplete;
    uint64_t len = getLE(in.data() + pos, 8);
    if (len > kMaxValue)
      return Parse::Bad;
    if (!have(8 + len))
      return Parse::Incomplete;
    data_[key].assign(in.data() + pos + 8, in.data() + pos + 8 + len);
    pos += 8 + len;
    reply.push_back(0);
    break;
  }
  case 'G': {
    if ((p = readKey(key)) != Parse::Done)
      return p;
    auto it = data_.find(key);
    reply.push_back(it != data_.end());
    if (it != data_.end()) {
      putU64(reply, it->second.size());
      reply.append(it->second.data(), it->second.size());
    }
    break;
  }
  case 'A': {
    if ((p = readKey(key)) != Parse::Done)
      return p;
    if (!have(8))
      return Parse::Incomplete;
    int64_t delta = int64_t(getLE(in.data() + pos, 8));
    pos += 8;
    std::vector<char> &value = data_[key];
    int64_t current =
        value.empty() ? 0
                      : std::strtoll(std::string(value.begin(), value.end()).c_str(), nullptr, 10);
    current = int64_t(uint64_t(current) + uint64_t(delta));
    std::string text = std::to_string(current);
    value.assign(text.begin(), text.end());
    putU64(reply, uint64_t(current));
    break;
  }
  case 'C': {
    if (!have(4))
      return Parse::Incomplete;
    uint32_t n = uint32_t(getLE(in.data() + pos, 4));
    if (n > kMaxKeys)
      return Parse::Bad;
    pos += 4;
    bool all = true;
    for (uint32_t i = 0; i < n; ++i) {
      if ((p = readKey(key)) != Parse::Done)
        return p;
      all = all && data_.count(key);
    }
    reply.push_back(all);
    break;
  }
  default:
    return Parse::Bad;
  }
  consumed = pos;
  return writeAll(client.fd, reply.data(), reply.size()) ? Parse::Done : Parse::Bad;
}

//===----------------------------------------------------------------------===//
// Client
//===----------------------------------------------------------------------===//

Status TcpStore::create(const std::string &host, int port, bool serve, double timeoutSeconds,
                        std::unique_ptr<TcpStore> &out) {
  std::unique_ptr<TcpStore> store(new TcpStore());
  store->host_ = host;
  store->port_ = port;
  store->timeout_ = timeoutSeconds;
  if (serve) {
    Status s = StoreServer::start(port, store->server_);
    if (!s)
      return s;
    store->port_ = store->server_->port();
  }
  Status s = store->connectToServer();
  if (!s)
    return s;
  out = std::move(store);
  return {};
}

TcpStore::~TcpStore() {
  if (fd_ >= 0)
    ::close(fd_);
  server_.reset(); // after our own connection: the server just sees it close
}

std::string TcpStore::where() const {
  return "the rendezvous store at " + host_ + ":" + std::to_string(port_);
}

Status TcpStore::connectToServer() {
  Clock::time_point deadline = deadlineAfter(timeout_);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string lastError = "no address";
  int pauseMs = 10;
  for (;;) {
    addrinfo *list = nullptr;
    int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &list);
    if (rc != 0) {
      lastError = std::string("cannot resolve '") + host_ + "': " + gai_strerror(rc);
    } else {
      for (addrinfo *a = list; a; a = a->ai_next) {
        int fd =
            ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
          continue;
        // Non-blocking connect: an unreachable host must not outlast the timeout.
        int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (r != 0 && errno == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          int waitMs = std::max(1, std::min(msLeft(deadline), 5000));
          if (::poll(&p, 1, waitMs) == 1) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            r = err == 0 ? 0 : -1;
            errno = err;
          } else {
            errno = ETIMEDOUT;
          }
        }
        if (r == 0) {
          ::freeaddrinfo(list);
          int flags = fcntl(fd, F_GETFL);
          fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
          setNoDelay(fd);
          fd_ = fd;
          return {};
        }
        lastError = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(list);
    }
    if (msLeft(deadline) == 0)
      return Status::failure("cannot reach " + where() + " within " + seconds(timeout_) + ": " +
                             lastError + " (is rank 0 running? MASTER_ADDR/MASTER_PORT)");
    // Rank 0 may simply not be up yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(pauseMs, msLeft(deadline))));
    pauseMs = std::min(pauseMs * 2, 200);
  }
}

Status TcpStore::request(const std::string &message, std::vector<char> &reply, size_t fixedReply,
                         bool lengthPrefixed) {
  if (fd_ < 0)
    return Status::failure("lost the connection to " + where());
  auto lost = [&](const std::string &why) {
    ::close(fd_);
    fd_ = -1;
    return Status::failure(why);
  };
  if (!writeAll(fd_, message.data(), message.size()))
    return lost(where() + " closed the connection (rank 0 exited?)");
  // The server answers at once; only a dead or stuck server makes us wait.
  Clock::time_point deadline = deadlineAfter(timeout_);
  auto readExact = [&](char *dst, size_t n) -> Status {
    while (n > 0) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, msLeft(deadline));
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0)
        return lost(where() + " did not answer within " + seconds(timeout_));
      ssize_t got = ::recv(fd_, dst, n, 0);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return lost(where() + " closed the connection (rank 0 exited?)");
      dst += got;
      n -= size_t(got);
    }
    return {};
  };
  reply.resize(fixedReply);
  Status s = readExact(reply.data(), fixedReply);
  if (!s || !lengthPrefixed || reply[0] == 0)
    return s;
  char lenBytes[8];
  if (!(s = readExact(lenBytes, 8)))
    return s;
  uint64_t len = getLE(lenBytes, 8);
  if (len > kMaxValue)
    return lost(where() + " sent a malformed reply");
  reply.resize(1 + len);
  return readExact(reply.data() + 1, len);
}

Status TcpStore::set(const std::string &key, const std::vector<char> &value) {
  if (key.size() > kMaxKey || value.size() > kMaxValue)
    return Status::failure("store key '" + key + "' or its value is too large");
  std::string msg("S");
  putKey(msg, key);
  putU64(msg, value.size());
  msg.append(value.data(), value.size());
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<char> reply;
  return request(msg, reply, 1, false);
}

Status TcpStore::check(const std::vector<std::string> &keys, bool &present) {
  std::string msg("C");
  putU32(msg, uint32_t(keys.size()));
  for (const std::string &k : keys)
    putKey(msg, k);
  std::vector<char> reply;
  Status s = request(msg, reply, 1, false);
  present = s && reply[0] != 0;
  return s;
}

Status TcpStore::wait(const std::vector<std::string> &keys, double timeoutSeconds) {
  if (timeoutSeconds <= 0)
    timeoutSeconds = timeout_;
  if (keys.size() > kMaxKeys)
    return Status::failure("too many store keys in one wait");
  Clock::time_point deadline = deadlineAfter(timeoutSeconds);
  double pauseMs = 0.2;
  for (;;) {
    bool present = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Status s = check(keys, present);
      if (!s)
        return s;
    }
    if (present)
      return {};
    if (Clock::now() >= deadline) {
      std::string names;
      for (size_t i = 0; i < keys.size() && i < 4; ++i)
        names += (i ? ", '" : "'") + keys[i] + "'";
      if (keys.size() > 4)
        names += ", ...";
      return Status::failure("timed out after " + seconds(timeoutSeconds) + " waiting for key" +
                             (keys.size() > 1 ? "s " : " ") + names + " in " + where());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(pauseMs * 1000)));
    pauseMs = std::min(pauseMs * 2, 10.0);
  }
}

Status TcpStore::get(const std::string &key, std::vector<char> &value) {
  Clock::time_point deadline = deadlineAfter(timeout_);
  double pauseMs = 0.2;
  std::string msg("G");
  putKey(msg, key);
  for (;;) {
    std::vector<char> reply;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Status s = request(msg, reply, 1, true);
      if (!s)
        return s;
    }
    if (reply[0]) {
      value.assign(reply.begin() + 1, reply.end());
      return {};
    }
    if (Clock::now() >= deadline)
      return Status::failure("timed out after " + seconds(timeout_) + " waiting for key '" + key +
                             "' in " + where());
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(pauseMs * 1000)));
    pauseMs = std::min(pauseMs * 2, 10.0);
  }
}

Status TcpStore::add(const std::string &key, int64_t delta, int64_t &result) {
  std::string msg("A");
  putKey(msg, key);
  putU64(msg, uint64_t(delta));
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<char> reply;
  Status s = request(msg, reply, 8, false);
  if (s)
    result = int64_t(getLE(reply.data(), 8));
  return s;
}

int pickLoopbackPort() {
  static std::mt19937 rng(uint32_t(::getpid()) * 2654435761u ^
                          uint32_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<int> draw(20000, 32767);
  for (int attempt = 0; attempt < 200; ++attempt) {
    int port = draw(rng);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
      break;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(uint16_t(port));
    bool free = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free)
      return port;
  }
  return 29500; // torchrun's default; the store reports it if taken
}

} // namespace dist
} // namespace lcc
