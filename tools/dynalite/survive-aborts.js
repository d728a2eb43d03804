// Preloaded into dynalite (node -r) by the tests. dynalite rethrows a
// request stream's error (index.js: req.on('error', err => { throw err })),
// so a client killed mid-request -- which the crash and torture tests do
// on purpose -- would take the whole emulator down. Only that case is
// swallowed; any other uncaught exception still ends the process.
'use strict'
process.on('uncaughtException', function (err) {
  if (err && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'aborted')) {
    console.error('[survive-aborts] client went away mid-request:', err.code || err.message)
    return
  }
  console.error(err)
  process.exit(1)
})
