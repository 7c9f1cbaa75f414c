'use strict';
// A library's scoped idiom held open across protocol requests: the idiom
// (redlock's using(), or `acquire(); try { … } finally { release() }`) runs
// the application's critical section, which the driver parks on a promise.
// The acquire request answers once the section is entered; the release
// request ends it, normally or by an Error raised inside (the throw
// extension), and the idiom's own exit releases the lock.

// openScope starts run(enter): the idiom, which calls enter(lease) inside
// its scope once the lock is held and awaits what enter returns (the
// critical section). The scope:
//   entered  resolves with the lease once entered (lease.scope is then the
//            scope), with null when the idiom
//            returned without entering (refused), rejects with its error;
//   done     the idiom's own promise (settles once it has left the scope);
//   end(err) ends the critical section: normally, or by throwing err in it;
//   abandon() the caller stopped waiting (wait_ms ran out, SIGTERM): an
//            entry after it ends at once (late(lease) is called first), as
//            a careful application ends what it no longer waits for.
function openScope(run, { late } = {}) {
  const s = { entered: null, done: null, isEntered: false, abandoned: false, finish: null };
  let resolve;
  let reject;
  s.entered = new Promise((res, rej) => { resolve = res; reject = rej; });
  s.entered.catch(() => {}); // read by whoever waits; never unhandled
  const enter = (lease) => {
    if (s.abandoned) {
      if (late) late(lease);
      return Promise.resolve();
    }
    s.isEntered = true;
    s.lease = lease;
    if (lease && typeof lease === 'object') lease.scope = s;
    const section = new Promise((res, rej) => { s.finish = (err) => (err ? rej(err) : res()); });
    resolve(lease);
    return section;
  };
  s.end = (err) => {
    if (s.finish) s.finish(err);
  };
  s.abandon = () => { s.abandoned = true; };
  s.done = Promise.resolve().then(() => run(enter));
  s.done.then(() => { if (!s.isEntered) resolve(null); }, (e) => { if (!s.isEntered) reject(e); });
  s.done.catch(() => {}); // its error is read by the release that awaits it
  return s;
}

// race waits for p at most ms (no bound when ms is not a positive number):
// {value} when p resolved first, {error} when it rejected, {deadline: true}
// when the time ran out.
function race(p, ms) {
  let timer;
  const bounded = ms > 0 ? new Promise((r) => { timer = setTimeout(() => r({ deadline: true }), ms); }) : new Promise(() => {});
  return Promise.race([p.then((value) => ({ value }), (error) => ({ error })), bounded])
    .finally(() => clearTimeout(timer));
}

// thrownOf: the Error a release with throw raises inside the critical
// section (the throw extension), or null for a plain release.
function thrownOf(req) {
  if (req.throw === undefined || req.throw === null || req.throw === false) return null;
  return new Error(typeof req.throw === 'string' && req.throw !== '' ? req.throw : 'lockchaos: an error in the critical section');
}

module.exports = { openScope, race, thrownOf };
