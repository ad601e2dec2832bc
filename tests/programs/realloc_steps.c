/* realloc_steps [MIB] [ROUNDS]: a buffer grown by realloc, 1 KiB a step,
 * up to MIB MiB (default 200), written as it grows, then freed; ROUNDS times
 * (new-user trial 8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc,char**argv){
  size_t limit=(size_t)(argc>1?atol(argv[1]):200)<<20; size_t sz=0; char *buf=NULL; unsigned long acc=0;
  int rounds = argc>2?atoi(argv[2]):1;
  for(int r=0;r<rounds;r++){
  sz=0; buf=NULL;
  while(sz<limit){ char *nb=realloc(buf,sz+1024); if(!nb){perror("realloc");return 1;} buf=nb; memset(buf+sz,(int)(sz>>10),1024); sz+=1024; acc+=buf[sz/2]; }
  free(buf);
  }
  printf("%lu\n",acc); return 0;
}
