package server

// redstream's version numbers live here, and README's "Versions" section
// says the same to users. There are three, each answering one question:
//
//   - RedisVersion: which Redis does redstream behave as? The release
//     whose commands and replies it follows: the newest `since` in the
//     command table (TestRedisVersionIsNewestCommand keeps the two
//     equal). INFO's redis_version and HELLO's version report it, and
//     clients that pick commands by version read it there.
//   - Version: which redstream is this? INFO's redstream_version, the
//     start banner, `redstream --version`, and the redstream-ver field of
//     the RDB files it writes.
//   - Which RDB format does it write? persistence.RDBVersion, and its
//     redis-ver field names the Redis release that writes that format
//     (persistence.RDBRedisVersion), since that is what a loader reading
//     the field compares against, not the commands we serve.

// RedisVersion is the Redis release whose commands and replies redstream
// follows.
const RedisVersion = "8.10.0"

// Version is redstream's own version.
var Version = "0.1.0"
