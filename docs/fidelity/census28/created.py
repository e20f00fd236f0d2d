import json,sys
r=json.load(open(sys.argv[1]))
for run in r['runs']:
    o=run['workload']['options']
    t=run['results']['transactions']
    side=run['target'] if isinstance(run['target'],str) else 'real'
    u=run['engine']['undo']; io=run['io']['total']
    print('%-22s %d×%-8d %-8s created %.4f splits %.4f merges %.4f undo_alloc %.4f alloc %.4f evict %.3f written %.4f young %.3f'%(run['workload']['name'],o['tables'],o['table_size'],side,
      io['buffer_pages_created']/t,u['index_page_splits']/t,u['index_page_merge_successful']/t,u['undo_pages_allocated']/t,io['pages_allocated']/t,io['buffer_lru_batch_evicted']/t,io['buffer_pages_written']/t,io['buffer_pages_made_young']/t))
