"""What the scripts of this folder share: the socket of a MariaDB that `mvcclab run
--target mariadb --server-dir FOLDER` started, queries through the `mariadb` client, and
the kind of a block of INNODB_BUFFER_PAGE_LRU."""
import glob, subprocess, time

def wait_socket(folder):
    """The server's socket under `folder`, once it exists."""
    while True:
        s = glob.glob(folder + '/**/mysqld.sock', recursive=True)
        if s:
            return s[0]
        time.sleep(0.5)

def running(folder):
    return bool(glob.glob(folder + '/**/mysqld.sock', recursive=True))

def query(sock, sql, errors=None):
    """Rows as lists of strings; None on an error (its text appended to `errors`)."""
    r = subprocess.run(['mariadb', '-S', sock, '-u', 'root', '-N', '-B', '-e', sql],
                       capture_output=True, text=True)
    if r.returncode:
        if errors is not None:
            errors.append(r.stderr.strip()[:300])
        return None
    return [l.split('\t') for l in r.stdout.splitlines()]

def kind(r):
    """The kind of an INNODB_BUFFER_PAGE_LRU row (LRU_POSITION, SPACE, PAGE_NUMBER,
    PAGE_TYPE, INDEX_NAME, ...): freed (type UNKNOWN), undo or system (space 0), k_1,
    table (PRIMARY) or other."""
    space, ptype, index = r[1], r[3], r[4]
    if ptype == 'UNKNOWN': return 'freed'
    if space == '0': return 'undo' if ptype == 'UNDO_LOG' else 'system'
    if index == 'k_1': return 'k_1'
    if index == 'PRIMARY': return 'table'
    return 'other'
