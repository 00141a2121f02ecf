// Several processes over one database: the primary migrates once, sizes the pools, and forks
// WORKERS processes that each serve the basic example's app. Run it with `npm run example:cluster`.
//
//   DATABASE_URL  the database every worker uses (default ./base.db; use PostgreSQL or MySQL for real work)
//   WORKERS       number of processes (default: available CPUs)
//   POOL_SIZE     connections per process (default: 10, or less so that all workers fit max_connections)
//   PORT, HOST    where to listen (default 127.0.0.1:3000). Workers share the port and the primary
//                 spreads connections over them. PORT=0 gives each worker its own free port instead,
//                 which a test or a balancer that addresses workers one by one can use.
import cluster from 'node:cluster'
import { runPrimary } from './primary.js'
import { runWorker } from './worker.js'

if (cluster.isPrimary) await runPrimary()
else await runWorker()
