// aedes-persistence ships the in-memory persistence's types under types/ but not next to the file.
declare module 'aedes-persistence/asyncPersistence.js' {
  import MemoryPersistence from 'aedes-persistence/types/asyncPersistence.js';
  export default MemoryPersistence;
}
